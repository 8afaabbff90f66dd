// The fragmentation aggregator: the most VMM address space reserved and mapped at any instant,
// and each pool's footprint, live bytes, largest free gap and fragmentation at the end.
#include <catch2/catch.hpp>

#include "aggregators/fragmentation.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

struct Rig {
  Records rec;
  LiveState live;
  FragmentationAggregator frag;
  void feed(const Record& r) {
    live.apply(r);
    frag.after(live);
  }
  Fragmentation finish() {
    TraceReport rep;
    frag.finish(live, &rep);
    return rep.fragmentation;
  }
};

}  // namespace

TEST_CASE("fragmentation aggregator: VMM maxima over the run") {
  Rig g;
  g.feed(g.rec.reserve(0x100000000, 64 * MiB));
  g.feed(g.rec.reserve(0x200000000, 32 * MiB));
  g.feed(g.rec.event(HookId::cuMemAddressFree, 0x100000000, 64 * MiB));
  g.feed(g.rec.vmm_create(1, 2 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(0x200000000, 2 * MiB, 1));
  g.feed(g.rec.vmm_map(0x200200000, 2 * MiB, 1));
  g.feed(g.rec.vmm_unmap(0x200000000, 4 * MiB));
  Fragmentation f = g.finish();
  CHECK(f.vmm_reserved_bytes_max == 96 * MiB);
  CHECK(f.vmm_mapped_bytes_max == 4 * MiB);
  CHECK(f.pools.empty());
}

TEST_CASE("fragmentation aggregator: pools by key, named and default, with their free gaps") {
  Rig g;
  g.feed(g.rec.pool_create(0x5000, Records::device_location(1)));
  g.feed(g.rec.async(0x10000000, 4 * MiB, 0x5000));
  // The default pool of device 0: three blocks, the outer two freed (two 1 MiB gaps).
  g.feed(g.rec.async(0x20000000, 1 * MiB));
  g.feed(g.rec.async(0x20100000, 1 * MiB));
  g.feed(g.rec.async(0x20200000, 1 * MiB));
  g.feed(g.rec.free_async(0x20000000));
  g.feed(g.rec.free_async(0x20200000));
  Fragmentation f = g.finish();
  REQUIRE(f.pools.size() == 2);
  CHECK(f.pools[0].pool == "0x5000");
  CHECK(f.pools[0].device == 1);
  CHECK(f.pools[0].footprint_bytes == 4 * MiB);
  CHECK(f.pools[0].live_bytes == 4 * MiB);
  CHECK(f.pools[0].fragmentation == 0);
  CHECK(f.pools[1].pool == "default:0");
  CHECK(f.pools[1].device == 0);
  CHECK(f.pools[1].footprint_bytes == 3 * MiB);
  CHECK(f.pools[1].live_bytes == 1 * MiB);
  CHECK(f.pools[1].largest_free_gap_bytes == 1 * MiB);
  CHECK(f.pools[1].fragmentation == Approx(0.5));
}
