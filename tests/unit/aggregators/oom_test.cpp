// The OOM aggregator through the whole pass (it reads the replay and the growth aggregator): the
// state a failure met, which failures are OOMs, and NVML's process list attached to the right one;
// and the split of the memory this process's live set does not explain (split_unattributed), on
// its own and as the verdict takes it.
#include <catch2/catch.hpp>

#include "analysis_pass.h"
#include "oom_verdict.h"
#include "torch_verdict.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

TraceReport run(const std::vector<Record>& records, uint64_t pid = 42, uint64_t device_total = 0) {
  ProcessInfo pi;
  pi.pid = pid;
  if (device_total) pi.devices.push_back(DeviceInfo{0, device_total, "gpu", ""});
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

namespace {

// 8 GiB device; another process holds 6 GiB before this one starts. Its first context (512 MiB,
// measured only after it: it takes in the 6 GiB), 512 MiB of weights, a second context measured
// around its call (512 MiB), then a 2 GiB request that fails with 512 MiB free.
std::vector<Record> shared_gpu(Records& rec) {
  std::vector<Record> v;
  v.push_back(rec.context_made(0xc1, 0, 8 * GiB - 6 * GiB - 512 * MiB));
  v.push_back(rec.alloc(0x100000000, 512 * MiB));
  v.push_back(rec.context_made(0xc2, 1 * GiB, 512 * MiB));
  v.push_back(rec.oom(2 * GiB, 512 * MiB, 8 * GiB));
  return v;
}

}  // namespace

TEST_CASE("oom split: without NVML, measured context costs are this process's and a first context's stays elsewhere, said") {
  Records rec;
  TraceReport rep = run(shared_gpu(rec), 42, 8 * GiB);
  REQUIRE(rep.ooms.size() == 1);
  OomReport& o = rep.ooms[0];
  CHECK(o.not_attributable_bytes == 7 * GiB);
  CHECK(o.code_bytes == 7 * GiB);  // 6.5 GiB after-only + 512 MiB measured
  CHECK(o.code_after_only_bytes == 6 * GiB + 512 * MiB);
  judge_oom(o);
  CHECK(o.own_code_basis == "measured");
  CHECK(o.own_code_bytes == 512 * MiB);  // the second context only
  CHECK(o.elsewhere_bytes == 6 * GiB + 512 * MiB);
  CHECK(o.elsewhere_unsure_bytes == 6 * GiB + 512 * MiB);
  // A real "another process holds 6 GiB" is not turned into "the context costs it".
  CHECK(o.verdict == "other_processes");
  CHECK(o.causes[0].evidence.at("other_bytes") == 6 * GiB + 512 * MiB);
  CHECK(o.causes[0].evidence.at("first_context_unsure_bytes") == 6 * GiB + 512 * MiB);
  CHECK(o.causes[0].summary.find("up to 6.50 GiB of it may be this process's first context") != std::string::npos);
  // The breakdown shows the costs as measured.
  CHECK(o.fidelity.contexts_bytes == 7 * GiB);
}

TEST_CASE("oom split: NVML's row for this process bounds its first context, and the breakdown counts nothing twice") {
  Records rec;
  std::vector<Record> v = shared_gpu(rec);
  // This process as NVML counts it: weights + both contexts (1.5 GiB); another one holds 6 GiB.
  v.push_back(rec.gpu_processes(0, {{42, "self", 1 * GiB + 512 * MiB}, {7, "python", 6 * GiB}}));
  TraceReport rep = run(v, 42, 8 * GiB);
  REQUIRE(rep.ooms.size() == 1);
  OomReport& o = rep.ooms[0];
  CHECK(o.nvml_self);
  CHECK(o.nvml_self_bytes == 1 * GiB + 512 * MiB);
  CHECK(o.own_code_basis == "nvml");
  CHECK(o.own_code_bytes == 1 * GiB);
  // The list took the other process's 6 GiB off the first context (rule 14): nothing of it is
  // left measured only after, and the row agrees (1.5 GiB - 512 MiB weights = both contexts).
  CHECK(o.code_bytes == 1 * GiB);
  CHECK(o.code_after_only_bytes == 0);
  CHECK(o.first_context_bytes == 0);
  CHECK(o.elsewhere_bytes == 6 * GiB);
  CHECK(o.elsewhere_unsure_bytes == 0);
  CHECK(o.fidelity.contexts_bytes == 1 * GiB);
  CHECK(o.fidelity.other_processes_bytes == 6 * GiB);
  CHECK(o.fidelity.unexplained_bytes == 0);
  // The peak was read at the failure (nothing changed after the weights): the same bound.
  REQUIRE(rep.peaks.size() == 1);
  CHECK(rep.peaks[0].fidelity.contexts_bytes == 1 * GiB);
  CHECK(rep.peaks[0].fidelity.unexplained_bytes == 0);
  judge_oom(o);
  CHECK(o.verdict == "other_processes");
  CHECK(o.causes[0].evidence.at("other_bytes") == 6 * GiB);
  CHECK(o.causes[0].evidence.count("first_context_unsure_bytes") == 0);
}

// The recorder's sampler lists the device's processes right after its first context (rule 14).
TEST_CASE("first context: the list NVML gave right after it takes the other processes off its cost, at a peak and a later OOM") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.context_made(0xc1, 0, 8 * GiB - 6 * GiB - 512 * MiB));  // 6.5 GiB used after it
  v.push_back(rec.alloc(0x100000000, 512 * MiB));  // the peak: no reading of its own, the context's is nearest
  v.push_back(rec.gpu_processes(0, {{7, "python", 6 * GiB}}));  // no row for this process (a container)
  SECTION("no OOM: the peak's breakdown") {
    TraceReport rep = run(v, 42, 8 * GiB);
    REQUIRE(rep.peaks.size() == 1);
    const Fidelity& f = rep.peaks[0].fidelity;
    REQUIRE(f.known);
    CHECK(f.used_bytes == 6 * GiB + 512 * MiB);
    CHECK(f.contexts_bytes == 512 * MiB);  // was 6.5 GiB: the other process counted as a context
    CHECK(f.other_processes_known);
    CHECK(f.other_processes_bytes == 6 * GiB);
    CHECK(f.unexplained_bytes == 0);
  }
  SECTION("a later OOM: the context is this process's, measured; nothing unsure") {
    v.push_back(rec.oom(2 * GiB, 1 * GiB, 8 * GiB));
    TraceReport rep = run(v, 42, 8 * GiB);
    REQUIRE(rep.ooms.size() == 1);
    OomReport& o = rep.ooms[0];
    CHECK(o.code_bytes == 512 * MiB);
    CHECK(o.code_after_only_bytes == 0);
    judge_oom(o);
    CHECK(o.own_code_basis == "measured");
    CHECK(o.own_code_bytes == 512 * MiB);
    CHECK(o.elsewhere_bytes == 6 * GiB);
    CHECK(o.elsewhere_unsure_bytes == 0);
    // The list came 2 us before the failure: it is not the OOM's own (none was written).
    CHECK_FALSE(o.nvml);
  }
}

TEST_CASE("first context: a list that comes more than a second after it changes nothing of its cost") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.context_made(0xc1, 0, 8 * GiB - 6 * GiB - 512 * MiB));
  v.push_back(rec.alloc(0x100000000, 512 * MiB));
  rec.t += 2'000'000'000;  // others may have come or gone since
  v.push_back(rec.gpu_processes(0, {{7, "python", 6 * GiB}}));
  v.push_back(rec.oom(2 * GiB, 1 * GiB, 8 * GiB));
  TraceReport rep = run(v, 42, 8 * GiB);
  REQUIRE(rep.ooms.size() == 1);
  CHECK(rep.ooms[0].code_after_only_bytes == 6 * GiB + 512 * MiB);
  CHECK_FALSE(rep.ooms[0].nvml);  // taken before the failure: not the failure's list
  REQUIRE(rep.peaks.size() == 1);
  CHECK(rep.peaks[0].fidelity.contexts_bytes == 6 * GiB + 512 * MiB);
}

TEST_CASE("oom split: every part is bounded by what the device has unexplained") {
  OomReport o;
  o.device_total_bytes = 16 * GiB;
  o.device_free_bytes = 14 * GiB;
  o.requested_bytes = 20 * GiB;
  o.process_device_bytes = 1 * GiB;
  o.not_attributable_bytes = 1 * GiB;
  o.pool_cached_bytes = 256 * MiB;
  SECTION("measured costs larger than the rest (a cost measured while another thread freed)") {
    o.code_bytes = 2 * GiB;
    split_unattributed(o);
    CHECK(o.own_cached_bytes == 256 * MiB);
    CHECK(o.own_code_bytes == 768 * MiB);
    CHECK(o.elsewhere_bytes == 0);
    CHECK(o.elsewhere_unsure_bytes == 0);
  }
  SECTION("a first context alongside measured code: only what is left of the rest is unsure") {
    o.code_bytes = 1 * GiB;
    o.code_after_only_bytes = 768 * MiB;
    split_unattributed(o);
    CHECK(o.own_code_bytes == 256 * MiB);
    CHECK(o.elsewhere_bytes == 512 * MiB);
    CHECK(o.elsewhere_unsure_bytes == 512 * MiB);
    CHECK(o.own_cached_bytes + o.own_code_bytes + o.elsewhere_bytes == o.not_attributable_bytes);
  }
  SECTION("NVML's row smaller than live + cached (read a moment later): nothing of it is code") {
    o.code_bytes = 512 * MiB;
    o.code_after_only_bytes = 512 * MiB;
    o.nvml = o.nvml_self = true;
    o.nvml_self_bytes = 1 * GiB;
    split_unattributed(o);
    CHECK(o.own_code_bytes == 0);
    CHECK(o.first_context_bytes == 0);
    CHECK(o.elsewhere_bytes == 768 * MiB);
    CHECK(o.elsewhere_unsure_bytes == 0);
  }
  SECTION("no costs recorded: the basis says so") {
    split_unattributed(o);
    CHECK(o.own_code_basis.empty());
    CHECK(o.elsewhere_bytes == 768 * MiB);
  }
}

TEST_CASE("oom split: PyTorch's verdict takes this process's contexts and code off the others too") {
  OomReport o;
  o.torch = true;
  TorchOomInfo& t = o.torch_info;
  t.device_total = o.device_total_bytes = 16 * GiB;
  t.device_free = o.device_free_bytes = 1 * GiB;
  t.allocated = t.reserved = 8 * GiB;  // PyTorch's segments, all in use
  t.block_size = t.tried_to_allocate = 2 * GiB;
  o.process_device_bytes = 8 * GiB;
  o.not_attributable_bytes = 7 * GiB;  // another process's 6.5 GiB and this one's 512 MiB context
  o.code_bytes = 512 * MiB;
  SECTION("a context measured around its call is this process's") {
    split_unattributed(o);
    judge_torch_oom(o);
    REQUIRE(o.causes.size() > 0);
    const Cause* c = nullptr;
    for (const Cause& x : o.causes)
      if (x.code == "other_processes") c = &x;
    REQUIRE(c);
    CHECK(c->evidence.at("other_bytes") == 6 * GiB + 512 * MiB);
    CHECK(c->evidence.count("first_context_unsure_bytes") == 0);
  }
  SECTION("NVML lists a process whose memory it cannot tell: it counts nothing, the others still bound") {
    o.nvml = o.nvml_self = true;
    o.nvml_self_bytes = 8 * GiB + 512 * MiB;
    o.nvml_rows = {{4242, "self", 8 * GiB + 512 * MiB}, {7, "trainer", 4 * GiB}, {8, "mig", kNvmlNotAvailable}};
    o.other_processes = {o.nvml_rows[1], o.nvml_rows[2]};
    split_unattributed(o);
    judge_torch_oom(o);
    const Cause* c = nullptr;
    for (const Cause& x : o.causes)
      if (x.code == "other_processes") c = &x;
    REQUIRE(c);
    CHECK(c->evidence.at("other_bytes") == 4 * GiB);  // what NVML listed, not a wrapped sum
    CHECK(c->summary.find("pid 8 (mig) (memory not given)") != std::string::npos);
  }
  SECTION("a first context measured only after it stays among the others, said") {
    o.code_after_only_bytes = 512 * MiB;
    split_unattributed(o);
    judge_torch_oom(o);
    const Cause* c = nullptr;
    for (const Cause& x : o.causes)
      if (x.code == "other_processes") c = &x;
    REQUIRE(c);
    CHECK(c->evidence.at("other_bytes") == 7 * GiB);
    CHECK(c->evidence.at("first_context_unsure_bytes") == 512 * MiB);
  }
}
