// The snapshots aggregator (the HTML timeline's click): each snapshot is exactly the live-at
// state at its instant and at every instant up to its `until`, the grid stays within 64-128
// snapshots as a run grows, and each keeps the biggest sites, biggest first.
#include <catch2/catch.hpp>

#include <random>

#include "aggregators/live_at.h"
#include "aggregators/snapshots.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

std::vector<Record> random_run(uint64_t seed, int n, Records& rec) {
  std::mt19937_64 rng(seed);
  std::vector<Record> rs;
  std::vector<uint64_t> live;
  for (int i = 0; i < n; ++i) {
    rec.t += rng() % 5 == 0 ? 1 + rng() % 2'000'000 : 1 + rng() % 3000;  // bursts and pauses
    if (!live.empty() && rng() % 3 == 0) {
      size_t k = rng() % live.size();
      rs.push_back(rec.free(live[k]));
      live.erase(live.begin() + long(k));
    } else {
      uint64_t addr = 0x100000ull * uint64_t(i + 1);
      rs.push_back(rec.alloc(addr, (1 + rng() % 64) * MiB, uint32_t(1 + rng() % 20)));
      live.push_back(addr);
    }
  }
  return rs;
}

LiveAt live_at(const std::vector<Record>& rs, uint64_t instant) {
  LiveState live;
  LiveAtAggregator agg(int64_t(instant - rs.front().t_ns), "", rs.front().t_ns);
  for (const Record& r : rs) {
    agg.before(r.t_ns, live);
    live.apply(r);
  }
  TraceReport rep;
  agg.finish(live, &rep);
  return rep.live_at;
}

TraceReport snapshots_of(const std::vector<Record>& rs) {
  LiveState live;
  SnapshotAggregator agg;
  for (const Record& r : rs) {
    agg.before(r.t_ns, live);
    live.apply(r);
  }
  TraceReport rep;
  agg.finish(&rep);
  return rep;
}

}  // namespace

TEST_CASE("snapshots: each is the live-at state at its instant and until the next event") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Records rec;
    std::vector<Record> rs = random_run(seed, 3000, rec);
    TraceReport rep = snapshots_of(rs);
    const Snapshots& s = rep.snapshots;
    REQUIRE(s.at.size() >= 64);
    REQUIRE(s.at.size() <= 128);
    CHECK(s.at.front().t_ns == rs.front().t_ns);
    for (size_t i = 0; i < s.at.size(); i += 7) {
      const Snapshot& x = s.at[i];
      INFO("seed " << seed << ", snapshot " << i);
      CHECK((x.t_ns - rs.front().t_ns) % s.interval_ns == 0);  // on the grid
      REQUIRE(x.until_ns > x.t_ns);
      if (i + 1 < s.at.size()) CHECK(x.until_ns <= s.at[i + 1].t_ns);
      for (uint64_t instant : {x.t_ns, (x.t_ns + x.until_ns) / 2, x.until_ns - 1}) {
        LiveAt want = live_at(rs, instant);
        CHECK(x.total_bytes == want.device_bytes);
        REQUIRE(x.devices.size() == want.devices.size());
        if (!x.devices.empty()) CHECK(x.devices[0].bytes == want.devices[0].device_bytes);
        REQUIRE(x.sites.size() == std::min<size_t>(SnapshotAggregator::kSites, want.live_set.size()));
        for (size_t k = 0; k < x.sites.size(); ++k) {
          CHECK(x.sites[k].stack_id == want.live_set[k].stack_id);
          CHECK(x.sites[k].bytes == want.live_set[k].bytes);
          CHECK(x.sites[k].count == want.live_set[k].count);
        }
      }
    }
  }
}

TEST_CASE("snapshots: a long pause is one snapshot that holds through it") {
  Records rec;
  std::vector<Record> rs = {rec.alloc(0x1000, 4 * MiB, 1)};
  rec.t += 5'000'000'000;  // 5 s later
  rs.push_back(rec.alloc(0x2000, 2 * MiB, 2));
  TraceReport rep = snapshots_of(rs);
  REQUIRE(rep.snapshots.at.size() == 1);
  const Snapshot& x = rep.snapshots.at[0];
  CHECK(x.t_ns == rs[0].t_ns);
  CHECK(x.until_ns == rs[1].t_ns);
  CHECK(x.total_bytes == 4 * MiB);
  REQUIRE(x.sites.size() == 1);
  CHECK(x.sites[0].stack_id == 1);
}
