// The peak aggregator on synthetic records: the instant of each device's peak and what made it up
// then (not at the end), devices apart, pinned and managed peaks, VMM at the peak, the top cut.
#include <catch2/catch.hpp>

#include "aggregators/peak.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

struct Rig {
  Records rec;
  LiveState live;
  ActivityStream acts{0};
  PeakAggregator peaks{live, acts};
  void feed(const Record& r) {
    live.apply(r);
    peaks.after(r.t_ns);
  }
  TraceReport finish(size_t top = 10) {
    TraceReport rep;
    peaks.finish(top, &rep);
    return rep;
  }
};

std::vector<std::pair<uint32_t, uint64_t>> stacks_of(const std::vector<SiteGroup>& v) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const SiteGroup& g : v) out.push_back({g.stack_id, g.bytes});
  return out;
}

}  // namespace

TEST_CASE("peak aggregator: the live set is the peak's, not the end's") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 10 * MiB, 1));
  Record b = g.rec.alloc(0x2000000, 20 * MiB, 2);
  g.feed(b);  // 30 MiB: the peak
  g.feed(g.rec.free(0x1000000));
  g.feed(g.rec.alloc(0x3000000, 5 * MiB, 3));  // 25 MiB
  TraceReport rep = g.finish();
  REQUIRE(rep.peaks.size() == 1);
  const DevicePeak& p = rep.peaks[0];
  CHECK(p.device == 0);
  CHECK(p.bytes == 30 * MiB);
  CHECK(p.t_ns == b.t_ns);
  CHECK(stacks_of(p.live_set) == std::vector<std::pair<uint32_t, uint64_t>>{{2, 20 * MiB}, {1, 10 * MiB}});
  CHECK(p.live_set[0].share == Approx(2.0 / 3));
  CHECK(p.by_kind == std::map<std::string, uint64_t>{{"device", 30 * MiB}});
}

TEST_CASE("peak aggregator: a higher peak later replaces the snapshot, devices have their own, highest first") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 10 * MiB, 1));
  g.feed(g.rec.free(0x1000000));
  g.feed(g.rec.alloc(0x2000000, 12 * MiB, 2));
  g.rec.device = 1;
  g.feed(g.rec.alloc(0x3000000, 20 * MiB, 3));
  TraceReport rep = g.finish();
  REQUIRE(rep.peaks.size() == 2);
  CHECK(rep.peaks[0].device == 1);
  CHECK(rep.peaks[0].bytes == 20 * MiB);
  CHECK(rep.peaks[1].device == 0);
  CHECK(stacks_of(rep.peaks[1].live_set) == std::vector<std::pair<uint32_t, uint64_t>>{{2, 12 * MiB}});
}

TEST_CASE("peak aggregator: pinned host and managed peaks, no device memory, no device peak") {
  Rig g;
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x7000000, 4 * MiB));
  g.feed(g.rec.event(HookId::cuMemFreeHost, 0x7000000, 0));
  g.feed(g.rec.event(HookId::cuMemAllocManaged, 0x8000000, 2 * MiB));
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x9000000, 1 * MiB));
  TraceReport rep = g.finish();
  CHECK(rep.peaks.empty());
  CHECK(rep.pinned_host_peak_bytes == 4 * MiB);
  CHECK(rep.managed_peak_bytes == 2 * MiB);
}

TEST_CASE("peak aggregator: pinned host and managed peaks are the process's, summed over the devices that made them") {
  Rig g;
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x7000000, 10 * MiB));
  g.feed(g.rec.event(HookId::cuMemAllocManaged, 0x8000000, 40 * MiB));
  g.rec.device = 1;
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0x9000000, 20 * MiB));
  g.feed(g.rec.event(HookId::cuMemAllocManaged, 0xa000000, 50 * MiB));  // 30 MiB pinned, 90 MiB managed
  g.feed(g.rec.event(HookId::cuMemFreeHost, 0x9000000, 0));
  g.rec.device = 0;
  g.feed(g.rec.event(HookId::cuMemFreeHost, 0x7000000, 0));
  g.feed(g.rec.event(HookId::cuMemHostAlloc, 0xb000000, 25 * MiB));  // 25 MiB: below the peak
  TraceReport rep = g.finish();
  CHECK(rep.pinned_host_peak_bytes == 30 * MiB);
  CHECK(rep.managed_peak_bytes == 90 * MiB);
}

TEST_CASE("peak aggregator: VMM reserved and mapped at the instant of the highest peak, physical memory by kind") {
  Rig g;
  g.feed(g.rec.reserve(0x100000000, 64 * MiB));
  g.feed(g.rec.vmm_create(0x51, 2 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(0x100000000, 2 * MiB, 0x51));
  g.feed(g.rec.vmm_create(0x52, 2 * MiB, Records::device_location(0)));  // the peak: 2 MiB mapped then
  g.feed(g.rec.vmm_map(0x100200000, 2 * MiB, 0x52));
  g.feed(g.rec.vmm_unmap(0x100000000, 4 * MiB));  // nothing freed yet: the handles are held
  g.feed(g.rec.vmm_release(0x51));                // the first drop
  g.feed(g.rec.vmm_release(0x52));
  g.feed(g.rec.reserve(0x200000000, 32 * MiB));
  TraceReport rep = g.finish();
  REQUIRE(rep.peaks.size() == 1);
  CHECK(rep.peaks[0].bytes == 4 * MiB);
  CHECK(rep.peaks[0].by_kind == std::map<std::string, uint64_t>{{"vmm_physical", 4 * MiB}});
  CHECK(rep.fragmentation.vmm_reserved_bytes_at_peak == 64 * MiB);
  CHECK(rep.fragmentation.vmm_mapped_bytes_at_peak == 2 * MiB);
}

TEST_CASE("peak aggregator: the live set is cut to the top groups, shares of the whole") {
  Rig g;
  g.feed(g.rec.alloc(0x1000000, 1 * MiB, 1));
  g.feed(g.rec.alloc(0x2000000, 2 * MiB, 2));
  g.feed(g.rec.alloc(0x3000000, 5 * MiB, 3));
  TraceReport rep = g.finish(2);
  REQUIRE(rep.peaks.size() == 1);
  CHECK(stacks_of(rep.peaks[0].live_set) == std::vector<std::pair<uint32_t, uint64_t>>{{3, 5 * MiB}, {2, 2 * MiB}});
  CHECK(rep.peaks[0].live_set[0].share == Approx(5.0 / 8));
  CHECK(rep.peaks[0].left_out_sites == 1);  // what the cut left out is said, not lost
  CHECK(rep.peaks[0].left_out_bytes == 1 * MiB);
}
