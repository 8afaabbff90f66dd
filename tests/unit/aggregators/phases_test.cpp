// The phases aggregator through the pass: device memory against top-level NVTX ranges whose
// markers arrive after the memory events (CUPTI batches them): per range name, how often it ran,
// its highest peak and its largest rise over its start; highest peak first.
#include <catch2/catch.hpp>

#include "encoded_activity.h"
#include "analysis_pass.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

constexpr uint64_t kMs = 1'000'000, T = 1'000'000'000;
constexpr uint32_t kStart = CUPTI_ACTIVITY_FLAG_MARKER_START, kEnd = CUPTI_ACTIVITY_FLAG_MARKER_END;

Record at(Record r, uint64_t t) {
  r.t_ns = t;
  return r;
}

}  // namespace

TEST_CASE("phases aggregator: memory by top-level NVTX range, from markers written later") {
  Records rec;
  std::vector<Record> v;
  ActivityRecords act(&v);
  act.started(T);
  v.push_back(at(rec.alloc(0x1000000, 4 * MiB), T + 2 * kMs));  // forward #1: up to 6 MiB
  v.push_back(at(rec.alloc(0x2000000, 2 * MiB), T + 3 * kMs));
  v.push_back(at(rec.free(0x1000000), T + 4 * kMs));
  v.push_back(at(rec.free(0x2000000), T + 6 * kMs));
  v.push_back(at(rec.alloc(0x3000000, 8 * MiB), T + 11 * kMs));  // forward #2: 8 MiB from 0
  v.push_back(at(rec.free(0x3000000), T + 13 * kMs));
  act.write_at = T + 80 * kMs;
  act.marker(kStart, 1, T + 1 * kMs, "forward");
  act.marker(kEnd, 1, T + 8 * kMs, nullptr);
  act.marker(kStart, 2, T + 10 * kMs, "forward");
  act.marker(kEnd, 2, T + 14 * kMs, nullptr);
  act.marker(kStart, 3, T + 20 * kMs, "backward");  // no memory moved inside it
  act.marker(kEnd, 3, T + 21 * kMs, nullptr);
  AnalysisPass pass(ProcessInfo{}, AnalysisOptions{});
  for (const Record& r : v) pass.feed(r);
  TraceReport rep;
  pass.finish(&rep);
  REQUIRE(rep.phases.size() == 2);
  CHECK(rep.phases[0].name == "forward");
  CHECK(rep.phases[0].count == 2);
  CHECK(rep.phases[0].max_peak_bytes == 8 * MiB);
  CHECK(rep.phases[0].max_growth_bytes == 8 * MiB);
  CHECK(rep.phases[1].name == "backward");
  CHECK(rep.phases[1].count == 1);
  CHECK(rep.phases[1].max_peak_bytes == 0);
  CHECK(rep.phases[1].max_growth_bytes == 0);
}
