// The live-at aggregator (`--at T`): the state at the instant, by device and call site, taken
// before the first event after it; past the end, the state at the end.
#include <catch2/catch.hpp>

#include "aggregators/live_at.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

TraceReport run(int64_t at, std::vector<Record> rs, uint64_t header_start) {
  LiveState live;
  LiveAtAggregator agg(at, "", header_start);
  for (const Record& r : rs) {
    agg.before(r.t_ns, live);
    live.apply(r);
  }
  TraceReport rep;
  agg.finish(live, &rep);
  return rep;
}

}  // namespace

TEST_CASE("live at: the state at the instant, events after it left out") {
  Records rec;  // events every 1 us from t = 1.001 ms
  uint64_t start = rec.t;
  std::vector<Record> rs = {rec.alloc(0x1000, 4 * MiB, 1), rec.alloc(0x2000, 2 * MiB, 2), rec.free(0x1000),
                            rec.alloc(0x3000, 8 * MiB, 3)};
  // 2.5 us after the start: the two first allocations (at 1 and 2 us), not the free at 3 us.
  TraceReport rep = run(2500, rs, start);
  const LiveAt& l = rep.live_at;
  CHECK(l.asked);
  CHECK_FALSE(l.past_end);
  CHECK(l.t_ns == start + 2500);
  REQUIRE(l.devices.size() == 1);
  CHECK(l.devices[0].device_bytes == 6 * MiB);
  CHECK(l.device_bytes == 6 * MiB);
  REQUIRE(l.live_set.size() == 2);
  CHECK(l.live_set[0].stack_id == 1);
  CHECK(l.live_set[0].bytes == 4 * MiB);
  // At 3.5 us: after the free.
  rep = run(3500, rs, start);
  CHECK(rep.live_at.device_bytes == 2 * MiB);
  // An event exactly at the instant counts as before it.
  rep = run(1000, rs, start);
  CHECK(rep.live_at.device_bytes == 4 * MiB);
}

TEST_CASE("live at: past the end is the end state, not asked is nothing, the origin is the first event when earlier") {
  Records rec;
  uint64_t start = rec.t;
  std::vector<Record> rs = {rec.alloc(0x1000, 4 * MiB), rec.alloc(0x2000, 2 * MiB)};
  TraceReport rep = run(60'000'000'000, rs, start);
  CHECK(rep.live_at.past_end);
  CHECK(rep.live_at.device_bytes == 6 * MiB);
  rep = run(-1, rs, start);
  CHECK_FALSE(rep.live_at.asked);
  // A header written after the first event (the trace opens on it): time zero is that event.
  rep = run(0, rs, rs[0].t_ns + 500);
  CHECK(rep.live_at.t_ns == rs[0].t_ns);
  CHECK(rep.live_at.device_bytes == 4 * MiB);
}

TEST_CASE("live at a mark: the state at the first begin of the region of that name, or the end when it never came") {
  Records rec;
  uint64_t start = rec.t;
  std::vector<Record> rs = {rec.alloc(0x1000, 4 * MiB, 1), rec.alloc(0x2000, 2 * MiB, 2), rec.free(0x1000)};
  auto run_mark = [&](const std::string& name, const std::vector<std::pair<size_t, RegionMark>>& marks) {
    LiveState live;
    LiveAtAggregator agg(-1, name, start);
    bool taken = false;
    for (size_t i = 0; i < rs.size(); ++i) {
      for (const auto& [at, m] : marks)
        if (at == i) taken |= agg.on_mark(rs[i].t_ns - 1, m, live);
      CHECK_FALSE(agg.before(rs[i].t_ns, live));  // (time plays no part)
      live.apply(rs[i]);
    }
    TraceReport rep;
    rep.last_t_ns = rs.back().t_ns;
    agg.finish(live, &rep);
    return std::make_pair(taken, rep.live_at);
  };
  RegionMark end_mark{false, "step"}, begin_mark{true, "step"}, other{true, "other"};
  // The end of the region and another name do not count; its begin before the free does.
  auto [taken, l] = run_mark("step", {{1, end_mark}, {1, other}, {2, begin_mark}});
  CHECK(taken);
  CHECK(l.mark == "step");
  CHECK(l.mark_found);
  CHECK_FALSE(l.past_end);
  CHECK(l.device_bytes == 6 * MiB);
  CHECK(l.t_ns == rs[2].t_ns - 1);
  // Only the first begin counts.
  std::tie(taken, l) = run_mark("step", {{1, begin_mark}, {2, begin_mark}});
  CHECK(l.device_bytes == 4 * MiB);
  // Never there: the end state, said.
  std::tie(taken, l) = run_mark("missing", {{1, begin_mark}});
  CHECK_FALSE(taken);
  CHECK_FALSE(l.mark_found);
  CHECK(l.past_end);
  CHECK(l.device_bytes == 2 * MiB);
  CHECK(l.t_ns == rs.back().t_ns);
}
