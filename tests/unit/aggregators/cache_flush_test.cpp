// The cache-flush aggregator on synthetic records: an OOM, frees of cached device memory, the same
// request again succeeding is one flush; anything else is none.
#include <catch2/catch.hpp>

#include "accounting.h"
#include "aggregators/cache_flush.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

struct Rig {
  Records rec;
  LiveState live;
  CacheFlushAggregator flushes;
  void feed(const Record& r) {  // as the pass does
    if (r.result != 0) {
      if (vt::is_out_of_memory(*r.op, r.result)) flushes.on_oom(r);
      return;
    }
    flushes.before(r, live);
    live.apply(r);
  }
  std::vector<CacheFlush> finish() {
    TraceReport rep;
    flushes.finish(&rep);
    return rep.fragmentation.cache_flushes;
  }
};

}  // namespace

TEST_CASE("cache-flush aggregator: OOM, cached blocks freed, the same request retried") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 16 * MiB));
  g.feed(g.rec.alloc(0x2000000, 16 * MiB));
  Record o = g.rec.oom(48 * MiB, 16 * MiB, 64 * MiB);
  g.feed(o);
  g.feed(g.rec.free(0x1000000));
  g.feed(g.rec.free(0x2000000));
  g.feed(g.rec.free(0x9000000));  // unknown: frees nothing
  g.feed(g.rec.alloc(0x3000000, 48 * MiB));
  auto f = g.finish();
  REQUIRE(f.size() == 1);
  CHECK(f[0].t_ns == o.t_ns);
  CHECK(f[0].requested_bytes == 48 * MiB);
  CHECK(f[0].freed_bytes == 32 * MiB);
  CHECK(f[0].freed_count == 2);
  CHECK(f[0].retry_succeeded);
}

TEST_CASE("cache-flush aggregator: another request, no frees, or frees of other memory are no flush") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 16 * MiB));
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x7000000, 16 * MiB));
  g.feed(g.rec.oom(48 * MiB, 0, 64 * MiB));
  g.feed(g.rec.free(0x1000000));
  g.feed(g.rec.alloc(0x3000000, 32 * MiB));  // another size: the sequence ends unrecorded
  g.feed(g.rec.alloc(0x4000000, 48 * MiB));
  g.feed(g.rec.oom(48 * MiB, 0, 64 * MiB));
  g.feed(g.rec.alloc(0x5000000, 48 * MiB));  // no frees in between
  g.feed(g.rec.oom(48 * MiB, 0, 64 * MiB));
  g.feed(g.rec.event(HookId::cuMemFreeHost, 0x7000000, 0));  // pinned host memory: not the cache
  g.feed(g.rec.alloc(0x6000000, 48 * MiB));
  CHECK(g.finish().empty());
}

TEST_CASE("cache-flush aggregator: a flush whose retry failed too is one (PyTorch's OOM after its flush)") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 16 * MiB));
  Record first = g.rec.oom(48 * MiB, 16 * MiB, 64 * MiB);
  g.feed(first);
  g.feed(g.rec.free(0x1000000));
  g.feed(g.rec.oom(48 * MiB, 32 * MiB, 64 * MiB));  // the retry fails as well
  g.feed(g.rec.oom(48 * MiB, 32 * MiB, 64 * MiB));  // a failure with no frees since: no flush of its own
  auto f = g.finish();
  REQUIRE(f.size() == 1);
  CHECK(f[0].t_ns == first.t_ns);
  CHECK(f[0].freed_bytes == 16 * MiB);
  CHECK_FALSE(f[0].retry_succeeded);
}
