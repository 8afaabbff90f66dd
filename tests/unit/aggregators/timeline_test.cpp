// The timeline aggregator: max-preserving downsampling (a peak never disappears, however long the
// run), and one series per device and bucket that was ever non-zero.
#include <catch2/catch.hpp>

#include <algorithm>

#include "aggregators/timeline.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

TEST_CASE("timeline: points within one bucket keep the highest") {
  Timeline tl(16);
  tl.add(100, 5);
  tl.add(200, 9);
  tl.add(300, 2);
  auto p = tl.take();
  REQUIRE(p.size() == 1);
  CHECK(p[0] == std::make_pair(uint64_t(200), uint64_t(9)));
}

TEST_CASE("timeline: a short run gets as many points as a long one (buckets adapt to the run's length)") {
  // 27 ms of steady allocations, one every 27 us: with 1 ms buckets this was 28 points at most.
  Timeline tl(512);
  uint64_t t0 = 7'000'000'000;
  for (uint64_t i = 0; i < 1000; ++i) tl.add(t0 + i * 27'000, i * 4096);
  auto p = tl.take();
  CHECK(p.size() >= 500);
  CHECK(p.size() <= 1024);
  CHECK(p.back().second == 999 * 4096);
  // The same shape over an hour: the same number of points.
  Timeline hour(512);
  for (uint64_t i = 0; i < 1000; ++i) hour.add(t0 + i * 3'600'000'000ull, i * 4096);
  CHECK(hour.take().size() == p.size());
}

TEST_CASE("timeline: a long series is coarsened to ~2x the target and keeps its maximum") {
  Timeline tl(16);
  uint64_t t0 = 5'000'000'000;
  for (uint64_t i = 0; i < 10000; ++i) tl.add(t0 + i * 1'000'000, i == 6543 ? 1000000 : i % 100);
  auto p = tl.take();
  CHECK(p.size() <= 32);
  CHECK(p.size() >= 8);
  CHECK(std::is_sorted(p.begin(), p.end()));
  auto top = std::max_element(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  CHECK(top->first == t0 + 6543 * uint64_t(1'000'000));
  CHECK(top->second == 1000000);
}

TEST_CASE("timeline aggregator: a series per device and bucket that was non-zero, from its first value") {
  Records rec;
  LiveState live;
  TimelineAggregator agg(512);
  auto feed = [&](const Record& r) {
    live.apply(r);
    agg.after(r.t_ns, live);
  };
  Record a = rec.alloc(0x1000000, 4 * MiB);
  feed(a);
  feed(rec.free(0x1000000));
  rec.device = 1;
  rec.t += 5'000'000;
  Record h = rec.event(HookId::cuMemHostAlloc, 0x7000000, 1 * MiB);
  feed(h);
  TraceReport rep;
  agg.finish(&rep);
  REQUIRE(rep.timeline.size() == 2);
  CHECK(rep.timeline[0].device == 0);
  CHECK(rep.timeline[0].kind == "device");
  CHECK(rep.timeline[0].points.front() == std::make_pair(a.t_ns, 4 * MiB));
  CHECK(rep.timeline[1].device == 1);
  CHECK(rep.timeline[1].kind == "pinned_host");
  CHECK(rep.timeline[1].points == std::vector<std::pair<uint64_t, uint64_t>>{{h.t_ns, 1 * MiB}});
}
