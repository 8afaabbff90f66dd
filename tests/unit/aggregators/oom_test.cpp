// The OOM aggregator through the whole pass (it reads the replay and the growth aggregator): the
// state a failure met, which failures are OOMs, and NVML's process list attached to the right one.
#include <catch2/catch.hpp>

#include "analysis_pass.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

TraceReport run(const std::vector<Record>& records, uint64_t pid = 42) {
  ProcessInfo pi;
  pi.pid = pid;
  AnalysisPass pass(pi, AnalysisOptions{});
  for (const Record& r : records) pass.feed(r);
  TraceReport rep;
  pass.finish(&rep);
  return rep;
}

}  // namespace

TEST_CASE("oom aggregator: an out-of-memory acquire is reported with the state it met") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.alloc(0x100000000, 3 * GiB, 1));
  v.push_back(rec.async(0x200000000, 1 * GiB));  // the default pool keeps 1 GiB once freed
  v.push_back(rec.free_async(0x200000000));
  v.push_back(rec.vmm_create(0x77, 512 * MiB, Records::device_location(0), 2));  // never mapped
  Record o = rec.oom(2 * GiB, 1 * GiB, 8 * GiB);
  v.push_back(o);
  v.push_back(rec.alloc(0x300000000, 1 * MiB));
  TraceReport rep = run(v);
  REQUIRE(rep.ooms.size() == 1);
  const OomReport& x = rep.ooms[0];
  CHECK(x.t_ns == o.t_ns);
  CHECK(x.op == "cuMemAlloc_v2");
  CHECK(x.result == 2);
  CHECK(x.device == 0);
  CHECK(x.requested_bytes == 2 * GiB);
  CHECK(x.device_free_bytes == 1 * GiB);
  CHECK(x.device_total_bytes == 8 * GiB);
  CHECK(x.process_device_bytes == 3 * GiB + 512 * MiB);  // not the 1 MiB allocated after it
  CHECK(x.process_by_kind == std::map<std::string, uint64_t>{{"device", 3 * GiB}, {"vmm_physical", 512 * MiB}});
  CHECK(x.not_attributable_bytes == 7 * GiB - (3 * GiB + 512 * MiB));
  CHECK(x.pool_cached_bytes == 1 * GiB);
  CHECK(x.vmm_unmapped_bytes == 512 * MiB);
  REQUIRE(x.top_holders.size() == 2);
  CHECK(x.top_holders[0].stack_id == 1);
  CHECK(x.stack_id == 9);
  CHECK_FALSE(x.nvml);
  CHECK(rep.failed_events == 1);
}

TEST_CASE("oom aggregator: other failures are counted but are no OOM") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.failed(HookId::cuMemAlloc_v2, 1 * MiB, 1, 0, 0));   // CUDA_ERROR_INVALID_VALUE
  v.push_back(rec.failed(HookId::cuMemAlloc_v2, 1 * MiB, 201, 0, 0)); // no context
  v.push_back(rec.failed(HookId::cuMemFree_v2, 0, 2, 0, 0));          // a release cannot run out
  TraceReport rep = run(v);
  CHECK(rep.ooms.empty());
  CHECK(rep.failed_events == 3);
  CHECK(rep.events == 3);
}

TEST_CASE("oom aggregator: NVML's list goes to the latest OOM on its device that has none, without this process") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.oom(2 * GiB, 0, 8 * GiB));  // device 0
  rec.device = 1;
  v.push_back(rec.oom(2 * GiB, 0, 8 * GiB));  // device 1
  v.push_back(rec.gpu_processes(0, {{42, "self", 1 * GiB}, {7, "python", 6 * GiB}}));
  v.push_back(rec.gpu_processes(0, {{8, "late", 1}}));  // no OOM on device 0 left without one
  Record cut = rec.gpu_processes(1, {{9, "cut", 1}});
  cut.payload_len -= 2;  // damaged: the name runs past the end
  v.push_back(cut);
  TraceReport rep = run(v);
  REQUIRE(rep.ooms.size() == 2);
  CHECK(rep.ooms[0].nvml);
  REQUIRE(rep.ooms[0].other_processes.size() == 1);
  CHECK(rep.ooms[0].other_processes[0].pid == 7);
  CHECK(rep.ooms[0].other_processes[0].name == "python");
  CHECK(rep.ooms[0].other_processes[0].bytes == 6 * GiB);
  CHECK_FALSE(rep.ooms[1].nvml);
  CHECK(rep.ooms[1].other_processes.empty());
}
