// The kernel activity aggregator through the pass: what ran at a device's peak and at an OOM,
// answered from kernel records written ~80 ms after those instants (as CUPTI's buffers arrive),
// the recorder's status, and the coverage cross-check of CUPTI's allocations against interception.
#include <catch2/catch.hpp>

#include "encoded_activity.h"
#include "analysis_pass.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

constexpr uint64_t kMs = 1'000'000, T = 1'000'000'000;

TraceReport run(const std::vector<Record>& records) {
  AnalysisPass pass(ProcessInfo{}, AnalysisOptions{});
  for (const Record& r : records) pass.feed(r);
  TraceReport rep;
  pass.finish(&rep);
  return rep;
}

std::vector<std::string> names(const std::vector<KernelRef>& v) {
  std::vector<std::string> out;
  for (const KernelRef& k : v) out.push_back(k.name);
  return out;
}

Record at(Record r, uint64_t t) {
  r.t_ns = t;
  return r;
}

}  // namespace

TEST_CASE("kernel activity aggregator: what ran at the peak and at an OOM, status and coverage") {
  Records rec;
  std::vector<Record> v;
  ActivityRecords act(&v);
  act.started(T);
  v.push_back(at(rec.alloc(0x1000000, 1 * MiB), T + 1 * kMs));
  v.push_back(at(rec.alloc(0x2000000, 2 * MiB), T + 10 * kMs));  // the peak
  v.push_back(at(rec.free(0x2000000), T + 30 * kMs));
  v.push_back(at(rec.oom(1 * GiB, 0, 4 * GiB), T + 40 * kMs));
  v.push_back(at(rec.free(0x1000000), T + 50 * kMs));
  act.write_at = T + 80 * kMs;  // CUPTI's buffer arrives
  act.kernel("_Z6beforev", T + 5 * kMs, T + 9 * kMs);
  act.kernel("_Z4peakv", T + 8 * kMs, T + 15 * kMs);
  act.kernel("_Z3oomv", T + 35 * kMs, T + 45 * kMs);
  act.memory(0x1000000, 1 * MiB, T + 1 * kMs + 1000);  // interception saw it
  act.memory(0x7f00dead0000, 4096, T + 20 * kMs);      // it did not
  TraceReport rep = run(v);
  REQUIRE(rep.peaks.size() == 1);
  CHECK(names(rep.peaks[0].activity.running) == std::vector<std::string>{"peak()"});
  CHECK(names(rep.peaks[0].activity.last_before) == std::vector<std::string>{"peak()", "before()"});
  REQUIRE(rep.ooms.size() == 1);
  CHECK(names(rep.ooms[0].activity.running) == std::vector<std::string>{"oom()"});
  const KernelRecording& k = rep.kernels;
  CHECK(k.recorded);
  CHECK(k.kernels == 3);
  CHECK(k.status == "CUPTI recorded kernels (libcupti.so.13)");
  CHECK(k.cupti_allocations == 2);
  CHECK(k.matched == 1);
  CHECK(k.coverage == Approx(0.5));
  CHECK(k.missed == std::vector<std::string>{"0x7f00dead0000 4096 bytes"});
}

TEST_CASE("kernel activity aggregator: a trace without kernel activity says so and answers nothing") {
  Records rec;
  std::vector<Record> v = {rec.alloc(0x1000000, 1 * MiB)};
  TraceReport rep = run(v);
  CHECK_FALSE(rep.kernels.recorded);
  CHECK(rep.kernels.status == "no kernel activity in this trace");
  CHECK(rep.kernels.kernels == 0);
  REQUIRE(rep.peaks.size() == 1);
  CHECK(rep.peaks[0].activity.running.empty());
  CHECK(rep.peaks[0].activity.last_before.empty());
}
