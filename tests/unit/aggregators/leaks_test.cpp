// The leaks and growth aggregator on synthetic records: what is live at the end by site (every
// bucket), what only a context teardown freed, how the run ended, and growth: a site reaching new
// highs across the run is found, a site that only comes and goes is not.
#include <catch2/catch.hpp>

#include "aggregators/leaks.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

struct Rig {
  Records rec;
  LiveState live;
  LeakAggregator leaks;
  void feed(const Record& r) {
    live.apply(r);
    leaks.after(r.t_ns, live);
  }
};

}  // namespace

TEST_CASE("leaks aggregator: live at the end by site, teardown apart, the end of the run") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 4 * MiB, 1));
  g.feed(g.rec.alloc(0x2000000, 4 * MiB, 1));
  g.feed(g.rec.free(0x2000000));
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x7000000, 1 * MiB, 2));
  g.rec.context = 0x20;
  g.feed(g.rec.alloc(0x3000000, 8 * MiB, 3));
  Record destroy = g.rec.event(HookId::cuCtxDestroy_v2, 0, 0, 0);
  Records::set_aux(destroy, 0x20);
  g.feed(destroy);
  TraceReport rep;
  rep.process.closed_cleanly = false;
  g.leaks.finish(g.live, AllocatorAtExit{}, 10, &rep);
  CHECK(rep.end == "killed");
  REQUIRE(rep.leaks.size() == 2);
  CHECK(rep.leaks[0].stack_id == 1);
  CHECK(rep.leaks[0].bytes == 4 * MiB);
  CHECK(rep.leaks[0].count == 1);
  CHECK(rep.leaks[1].stack_id == 2);
  CHECK(rep.leaks[1].kind == "pinned_host");
  CHECK(rep.leak_bytes == 5 * MiB);
  CHECK(rep.leak_count == 2);
  REQUIRE(rep.teardown.size() == 1);
  CHECK(rep.teardown[0].stack_id == 3);
  CHECK(rep.teardown_bytes == 8 * MiB);
  TraceReport clean;
  clean.process.closed_cleanly = true;
  g.leaks.finish(g.live, AllocatorAtExit{}, 1, &clean);
  CHECK(clean.end == "clean_exit");
  CHECK(clean.leaks.size() == 1);  // cut to the top one; the totals are of all
  CHECK(clean.leak_bytes == 5 * MiB);
}

TEST_CASE("leaks aggregator: growth is a site reaching new highs over the run, not one that comes and goes") {
  Rig g;
  uint64_t addr = 0x10000000;
  for (int step = 0; step < 300; ++step) {
    g.feed(g.rec.alloc(addr, 16 * MiB, 7));  // a temporary, freed each step
    g.feed(g.rec.free(addr));
    g.feed(g.rec.alloc(addr + 0x1000000 + uint64_t(step) * 0x100000, 1 * MiB, 5));  // kept: the leak
    addr += 0x100000000;
  }
  TraceReport rep;
  rep.peaks.emplace_back();
  rep.peaks[0].bytes = 316 * MiB;
  rep.last_t_ns = g.rec.t;  // (AnalysisPass::finish sets it first)
  g.leaks.finish(g.live, AllocatorAtExit{}, 10, &rep);
  REQUIRE(rep.growth.size() == 1);
  const GrowthSite& s = rep.growth[0];
  CHECK(s.site.stack_id == 5);
  CHECK(s.site.count == 300);  // live now
  CHECK(s.growth_bytes >= 250 * MiB);
  CHECK(s.new_highs >= 3);
  CHECK(s.first_t_ns < s.last_t_ns);
  // At a failure now, the live state is the last snapshot; a bar above the growth finds nothing.
  std::vector<GrowthSite> before = g.leaks.grew_before(g.live, g.rec.t + 1, 1 * MiB);
  REQUIRE(before.size() == 1);
  CHECK(before[0].site.bytes == 300 * MiB);
  CHECK(g.leaks.grew_before(g.live, g.rec.t + 1, 1 * GiB).empty());
}

TEST_CASE("leaks aggregator: too short a run has no growth") {
  Rig g;
  for (int i = 0; i < 20; ++i) g.feed(g.rec.alloc(0x1000000 + uint64_t(i) * 0x1000000, 8 * MiB, 5));
  TraceReport rep;
  g.leaks.finish(g.live, AllocatorAtExit{}, 10, &rep);  // 2 checkpoints: fewer than the 4 growth needs
  CHECK(rep.growth.empty());
  CHECK(rep.leak_count == 20);
}

TEST_CASE("leaks aggregator: a caching allocator's segments are its cache, its tensors the leaks") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 20 * MiB, 1));  // two of PyTorch's segments (one site)...
  g.feed(g.rec.alloc(0x3000000, 20 * MiB, 1));
  g.feed(g.rec.alloc(0x5000000, 8 * MiB, 2));   // ...and a library's own allocation
  AllocatorAtExit cache;
  cache.known = true;
  cache.segments.push_back(SiteTable::Row{SiteKey{1, 0, Bucket::Device}, 0, SiteBytes{40 * MiB, 2}});
  cache.tensors.push_back(SiteTable::Row{SiteKey{9, 0, Bucket::Device}, 0, SiteBytes{6 * MiB, 3}});  // still allocated
  cache.reserved = 40 * MiB;
  cache.segment_count = 2;
  cache.allocated = 6 * MiB;
  TraceReport rep;
  rep.process.closed_cleanly = true;
  g.leaks.finish(g.live, cache, 10, &rep);
  CHECK(rep.leak_bytes == 14 * MiB);  // the library's 8 and the 6 of tensors; not the 34 cached
  CHECK(rep.leak_count == 4);
  REQUIRE(rep.leaks.size() == 2);
  CHECK(rep.leaks[0].stack_id == 2);
  CHECK(rep.leaks[0].kind == "device");
  CHECK(rep.leaks[1].stack_id == 9);
  CHECK(rep.leaks[1].kind == "tensor");
  CHECK(rep.torch_cache_at_exit.known);
  CHECK(rep.torch_cache_at_exit.reserved_bytes == 40 * MiB);
  CHECK(rep.torch_cache_at_exit.cached_bytes() == 34 * MiB);
  CHECK(rep.torch_cache_at_exit.segments == 2);
  // Without the allocator's view, the segments are what is left: leaks, as before.
  TraceReport plain;
  plain.process.closed_cleanly = true;
  g.leaks.finish(g.live, AllocatorAtExit{}, 10, &plain);
  CHECK(plain.leak_bytes == 48 * MiB);
  CHECK_FALSE(plain.torch_cache_at_exit.known);
}
