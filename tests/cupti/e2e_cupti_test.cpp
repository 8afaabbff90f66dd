// End to end under libvramtrace.so with the simulated driver: kernel activity from the fake
// libcupti on the trace's clock; stepping aside for a second client (linked, or found with
// dlsym); leaving CUPTI alone when a client or a tool is there first; no libcupti at all; NVTX
// injection; forked children; `vramtrace run --no-kernels` and `vramtrace export --perfetto`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <cupti.h>
#include <nlohmann/json.hpp>

#include "activity_fixture.h"
#include "activity_format.h"
#include "harness.h"

using vt::analyzer::RecorderState;
namespace fmt = vt::format;

namespace {

struct Run {
  e2e::Result result;
  std::string dir;
  std::vector<std::string> traces;
};

Run run_client(const std::string& mode, std::vector<std::pair<std::string, std::string>> env = {}, bool preload = true) {
  Run r;
  r.dir = e2e::temp_dir();
  e2e::Spec s;
  s.argv = {e2e::program("cupti_client"), mode};
  if (mode == "dlsym") s.argv.push_back(VT_FAKECUPTI);
  s.env = {{"VRAMTRACE_OUTPUT", r.dir}, {"VRAMTRACE_KERNELS", "1"}, {"VRAMTRACE_CUPTI_LIBRARY", VT_FAKECUPTI}};
  for (auto& e : env) s.env.push_back(e);
  s.preload = preload;
  s.timeout_s = 60;
  r.result = e2e::run(s);
  r.traces = e2e::files_in(r.dir);
  return r;
}

std::string after(const std::string& text, const std::string& key) {
  size_t p = text.find(key + "=");
  if (p == std::string::npos) return "";
  size_t e = text.find('\n', p);
  return text.substr(p + key.size() + 1, e - p - key.size() - 1);
}

std::vector<std::string> fake_log(const std::string& out) {
  size_t p = out.find("log:\n");
  return p == std::string::npos ? std::vector<std::string>{} : e2e::lines(out.substr(p + 5));
}

size_t index_of(const std::vector<std::string>& v, const std::string& s, size_t from = 0) {
  for (size_t i = from; i < v.size(); ++i)
    if (v[i] == s) return i;
  return SIZE_MAX;
}

size_t status_records(const actfix::Loaded& l, uint8_t kind) {
  size_t n = 0;
  for (const auto& s : l.index->status()) n += s.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("without libcupti: one status record, one stderr line, the same memory events") {
  std::string with_dir = e2e::temp_dir(), without_dir = e2e::temp_dir();
  e2e::Spec s;
  s.argv = {e2e::program("lookup_direct")};
  s.env = {{"VRAMTRACE_OUTPUT", with_dir}, {"VRAMTRACE_KERNELS", "1"}, {"VRAMTRACE_CUPTI_LIBRARY", "/nonexistent/libcupti.so"}};
  e2e::Result r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(r.err == "vramtrace: CUPTI not found; recording memory only\n");
  s.env = {{"VRAMTRACE_OUTPUT", without_dir}, {"VRAMTRACE_KERNELS", "0"}};
  e2e::Result r0 = e2e::run(s);
  CHECK(r0.err.empty());

  auto files = e2e::files_in(with_dir);
  REQUIRE(files.size() == 1);
  actfix::Loaded l = actfix::load(files[0]);
  RecorderState st = l.index->recorder();
  CHECK(st.unavailable);
  CHECK(st.reason == fmt::kCuptiWhyNotFound);
  CHECK(st.detail == "/nonexistent/libcupti.so");
  CHECK(l.index->status().size() == 1);
  CHECK(l.index->kernels().empty());
  auto base_files = e2e::files_in(without_dir);
  REQUIRE(base_files.size() == 1);
  e2e::Trace base = e2e::load(base_files[0]);
  std::vector<std::string> ops;
  for (const auto& e : l.events) ops.push_back(e.op ? e.op->name : "?");
  CHECK(!ops.empty());
  CHECK(ops == base.ops());  // memory tracing is exactly what it is with kernels off
}

TEST_CASE("kernel activity from libcupti lands in the trace on the trace's clock") {
  Run r = run_client("plain");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(r.result.err.empty());
  CHECK(after(r.result.out, "vramtrace_subscribed") == "1");
  auto log = fake_log(r.result.out);
  CHECK(index_of(log, "subscriber name vramtrace") != SIZE_MAX);
  CHECK(index_of(log, "register callbacks") != SIZE_MAX);
  CHECK(index_of(log, "enable 10") != SIZE_MAX);  // CONCURRENT_KERNEL
  CHECK(index_of(log, "enable 49") != SIZE_MAX);  // MEMORY2
  CHECK(index_of(log, "enable 12") != SIZE_MAX);  // MARKER (NVTX)
  CHECK(index_of(log, "register timestamp callback") == SIZE_MAX);  // never: see clock_align.h

  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  CHECK(l.problems.empty());
  RecorderState st = l.index->recorder();
  CHECK(st.started);
  CHECK(st.kinds == 0x3f);
  CHECK(st.library.find("libcupti.so.13") != std::string::npos);
  CHECK(status_records(l, fmt::kCuptiStopped) == 1);  // the forced flush at exit
  CHECK(st.lost_records >= 1);  // the fake's unfinished kernel in that forced flush

  const auto& ks = l.index->kernels();
  REQUIRE(ks.size() >= 4);  // >= 2 flushes x 2 kernels
  for (const auto& k : ks) {
    CHECK(k.start_ns >= l.info.start_monotonic_ns);
    CHECK(k.end_ns <= l.info.end_monotonic_ns);
    CHECK(k.end_ns > k.start_ns);
  }
  CHECK(l.index->display_name(ks[0].name_id) == "fake_gemm(float*, float*, float*, int)");
  CHECK(l.name_records == 2);  // fake_gemm and fake_relu, however many flushes
  CHECK(!l.index->copies().empty());
  CHECK(!l.index->cupti_memory().empty());
  CHECK(l.index->pools().size() == 1);
  CHECK(!l.index->nvtx_ranges().empty());
  CHECK(l.index->nvtx_ranges()[0].name == "step");
  // Memory events are all there.
  std::vector<std::string> ops;
  for (const auto& e : l.events) ops.push_back(e.op->name);
  CHECK(ops == std::vector<std::string>{"cuMemAlloc_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemFree_v2"});

  // And the CLI exports it for Perfetto.
  std::string json_path = r.dir + "/out.json";
  e2e::Spec ex;
  ex.argv = {e2e::cli(), "export", "--perfetto", json_path, r.traces[0]};
  ex.preload = false;
  e2e::Result er = e2e::run(ex);
  INFO(er.err);
  CHECK(er.exit_code == 0);
  std::ifstream f(json_path);
  nlohmann::json j = nlohmann::json::parse(f);
  size_t kernels = 0;
  for (const auto& e : j["traceEvents"]) kernels += e.value("cat", "") == "kernel";
  CHECK(kernels == ks.size());
  // The fake's MEMORY2 allocations are at addresses nothing allocated: all reported missed.
  const auto& cov = j["otherData"]["kernel_activity"]["coverage"];
  CHECK(cov["cupti_allocations"].get<size_t>() == l.index->cupti_memory().size());
  CHECK(cov["matched"] == 0);
  CHECK(cov["missed"].size() == l.index->cupti_memory().size());
}

TEST_CASE("a client arriving mid-run (torch.profiler): vramtrace steps aside first") {
  Run r = run_client("late");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "client_subscribe") == "0");
  CHECK(after(r.result.out, "client_register") == "0");
  CHECK(after(r.result.out, "client_records") != "0");  // the client gets its records
  CHECK(e2e::lines(r.result.err).size() == 1);
  CHECK(r.result.err.find("another CUPTI client started (cuptiSubscribe)") != std::string::npos);

  // The fake saw: our session, then flush, disable, unsubscribe, then the client's session.
  auto log = fake_log(r.result.out);
  size_t ours = index_of(log, "subscribe ok");
  size_t flush = index_of(log, "flush forced", ours);
  size_t disable = index_of(log, "disable 10", ours);
  size_t unsub = index_of(log, "unsubscribe", ours);
  size_t theirs = index_of(log, "subscribe ok", ours + 1);
  REQUIRE(theirs != SIZE_MAX);
  CHECK(ours < flush);
  CHECK(flush < disable);
  CHECK(disable < unsub);
  CHECK(unsub < theirs);
  CHECK(index_of(log, "subscribe refused") == SIZE_MAX);

  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  RecorderState st = l.index->recorder();
  CHECK(st.started);
  CHECK(st.stepped_aside);
  CHECK(st.stepped_aside_for == "cuptiSubscribe");
  CHECK(st.stepped_aside_ns > l.info.start_monotonic_ns);
  CHECK(status_records(l, fmt::kCuptiStopped) == 0);  // nothing of ours left to flush at exit
  // Memory tracing went on after the step aside.
  size_t later = 0;
  uint64_t first_later = ~0ull;
  for (const auto& e : l.events)
    if (e.t_ns > st.stepped_aside_ns) {
      ++later;
      first_later = std::min(first_later, e.t_ns);
    }
  CHECK(later == 3);  // the second alloc and both frees
  // Nothing recorded after we let go. The bound is the program's first allocation after its
  // cuptiSubscribe returned (our flush and disable ran inside that call), not the moment it
  // called: the forced flush still hands over kernels that ran while it was under way.
  REQUIRE(!l.index->kernels().empty());
  for (const auto& k : l.index->kernels()) CHECK(k.start_ns < first_later);
}

TEST_CASE("a client that finds cuptiSubscribe with dlsym(handle) is noticed too") {
  Run r = run_client("dlsym");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "client_subscribe") == "0");
  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  CHECK(l.index->recorder().stepped_aside);
}

TEST_CASE("a client there first keeps CUPTI, and vramtrace records memory only") {
  Run r = run_client("early");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "client_subscribe") == "0");
  auto log = fake_log(r.result.out);
  CHECK(index_of(log, "subscriber name vramtrace") == SIZE_MAX);  // never even tried
  CHECK(e2e::lines(r.result.err).size() == 1);
  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  RecorderState st = l.index->recorder();
  CHECK(st.unavailable);
  CHECK(st.reason == fmt::kCuptiWhyOtherClient);
  CHECK(l.events.size() == 4);
}

TEST_CASE("a tool holding CUPTI (Nsight-like refusal) or injected by environment is left alone") {
  Run busy = run_client("env", {{"FAKECUPTI_BUSY", "Nsight Systems"}});
  INFO(busy.result.out << busy.result.err);
  CHECK(busy.result.exit_code == 0);
  CHECK(busy.result.err == "vramtrace: CUPTI is in use by Nsight Systems; kernel activity off, recording memory only\n");
  REQUIRE(busy.traces.size() == 1);
  RecorderState st = actfix::load(busy.traces[0]).index->recorder();
  CHECK(st.reason == fmt::kCuptiWhyOtherClient);
  CHECK(st.detail == "Nsight Systems");

  Run inj = run_client("env", {{"CUDA_INJECTION64_PATH", "/opt/tool/libinjection.so"}});
  INFO(inj.result.out << inj.result.err);
  CHECK(inj.result.exit_code == 0);
  CHECK(index_of(fake_log(inj.result.out), "subscribe ok") == SIZE_MAX);
  REQUIRE(inj.traces.size() == 1);
  RecorderState st2 = actfix::load(inj.traces[0]).index->recorder();
  CHECK(st2.reason == fmt::kCuptiWhyOtherTool);
  CHECK(st2.detail == "CUDA_INJECTION64_PATH");
}

TEST_CASE("NVTX injection reaches the libcupti vramtrace records with, only when preloaded") {
  Run r = run_client("nvtx", {{"NVTX_INJECTION64_PATH", VT_LIBRARY}});
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(index_of(fake_log(r.result.out), "nvtx injection") != SIZE_MAX);
  CHECK(r.result.err.empty());

  Run bare = run_client("nvtx", {{"NVTX_INJECTION64_PATH", VT_LIBRARY}, {"CLIENT_WAIT_MS", "50"}}, /*preload=*/false);
  INFO(bare.result.out << bare.result.err);
  CHECK(bare.result.exit_code == 0);
  CHECK(index_of(fake_log(bare.result.out), "nvtx injection") == SIZE_MAX);
  CHECK(bare.traces.empty());
}

TEST_CASE("a forked child writes its own trace saying CUPTI stayed with the parent") {
  Run r = run_client("fork");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "child_exit") == "0");
  REQUIRE(r.traces.size() == 2);
  int parents = 0, children = 0;
  for (const auto& t : r.traces) {
    RecorderState st = actfix::load(t).index->recorder();
    if (st.unavailable && st.reason == fmt::kCuptiWhyForked) children++;
    if (st.started) parents++;
  }
  CHECK(parents == 1);
  CHECK(children == 1);
}

TEST_CASE("vramtrace run: NVTX goes to libvramtrace, --no-kernels turns kernels off") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s;
  s.preload = false;
  s.env = {{"VRAMTRACE_CUPTI_LIBRARY", VT_FAKECUPTI}};
  s.argv = {e2e::cli(), "run", "-o", dir, "--", e2e::program("cupti_client"), "env"};
  s.env.push_back({"VRAMTRACE_KERNELS", ""});  // as if unset (the harness sets 0)
  e2e::Result on = e2e::run(s);
  INFO(on.out << on.err);
  CHECK(on.exit_code == 0);
  CHECK(after(on.out, "nvtx") == VT_LIBRARY);
  std::string dir2 = e2e::temp_dir();
  s.argv = {e2e::cli(), "run", "--no-kernels", "-o", dir2, "--", e2e::program("cupti_client"), "env"};
  e2e::Result off = e2e::run(s);
  INFO(off.out << off.err);
  CHECK(off.exit_code == 0);
  CHECK(after(off.out, "nvtx") == "");
  CHECK(after(off.out, "kernels") == "0");
  auto files = e2e::files_in(dir2);
  REQUIRE(files.size() == 1);
  RecorderState st = actfix::load(files[0]).index->recorder();
  CHECK(st.reason == fmt::kCuptiWhyDisabled);
}

TEST_CASE("the report names kernel activity: status, coverage, what ran at the peak, memory by phase") {
  Run r = run_client("nvtx", {{"NVTX_INJECTION64_PATH", VT_LIBRARY}});
  REQUIRE(r.result.exit_code == 0);
  REQUIRE(r.traces.size() == 1);
  e2e::Spec rep;
  rep.argv = {e2e::cli(), "report", r.traces[0], "--format", "json"};
  rep.preload = false;
  e2e::Result er = e2e::run(rep);
  INFO(er.err);
  REQUIRE(er.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(er.out);
  CHECK(j["kernels"]["recorded"] == true);
  CHECK(j["kernels"]["kernels"].get<uint64_t>() >= 2);
  CHECK(j["kernels"]["coverage"]["cupti_allocations"].get<uint64_t>() >= 1);
  const auto& act = j["peak"]["activity"];
  INFO(act.dump());
  CHECK(act["running_kernels"].size() + act["last_kernels"].size() + act["nvtx"].size() >= 1);
  REQUIRE_FALSE(j["phases"].empty());
  CHECK(j["phases"][0]["name"] == "step");
  CHECK(j["phases"][0]["max_peak_bytes"].get<uint64_t>() > 0);
}

TEST_CASE("CUPTI's buffers: one activity pool per process and device buffers capped, said in the report") {
  Run r = run_client("plain");
  INFO(r.result.out << r.result.err);
  REQUIRE(r.result.exit_code == 0);
  auto log = fake_log(r.result.out);
  // Set before the buffer callbacks are registered (CUPTI reads them then).
  const size_t reg = index_of(log, "register callbacks");
  REQUIRE(reg != SIZE_MAX);
  CHECK(index_of(log, "set attribute " + std::to_string(int(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER)) + " 0") < reg);
  CHECK(index_of(log, "set attribute " + std::to_string(int(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT)) + " 8") < reg);
  REQUIRE(r.traces.size() == 1);
  e2e::Spec rep;
  rep.argv = {e2e::cli(), "report", r.traces[0], "--format", "json"};
  rep.preload = false;
  e2e::Result er = e2e::run(rep);
  REQUIRE(er.exit_code == 0);
  nlohmann::json b = nlohmann::json::parse(er.out).at("kernels").at("buffers");
  CHECK(b.at("activity_buffers") == "per process");
  CHECK(b.at("device_buffers_per_context") == 8);
  CHECK(b.at("device_buffer_bytes") == 3 << 20);  // the fake's answer
  CHECK(b.at("device_bytes_per_context") == 24 << 20);
  rep.argv = {e2e::cli(), "report", r.traces[0]};
  er = e2e::run(rep);
  CHECK(er.out.find("CUPTI's buffers: activity buffers per process; device buffers at most 8 x 3.00 MiB = 24.0 MiB") !=
        std::string::npos);

  // A libcupti that refuses the attributes: per-thread buffers stay, and the trace says so.
  Run refused = run_client("plain", {{"FAKECUPTI_NO_ATTRIBUTES", "1"}});
  REQUIRE(refused.result.exit_code == 0);
  REQUIRE(refused.traces.size() == 1);
  rep.argv = {e2e::cli(), "report", refused.traces[0], "--format", "json"};
  er = e2e::run(rep);
  REQUIRE(er.exit_code == 0);
  nlohmann::json rb = nlohmann::json::parse(er.out).at("kernels").at("buffers");
  CHECK(rb.at("activity_buffers") == "per thread");
  CHECK(rb.at("device_buffers_per_context") == 0);
}

namespace {

Run run_local(std::vector<std::pair<std::string, std::string>> env = {}) {
  Run r;
  r.dir = e2e::temp_dir();
  e2e::Spec s;
  s.argv = {e2e::program("cupti_local_client"), VT_LOCAL_CLIENT_LIB};
  s.env = {{"VRAMTRACE_OUTPUT", r.dir}, {"VRAMTRACE_KERNELS", "1"}, {"VRAMTRACE_CUPTI_LIBRARY", VT_FAKECUPTI_COPY}};
  for (auto& e : env) s.env.push_back(e);
  s.timeout_s = 60;
  r.result = e2e::run(s);
  r.traces = e2e::files_in(r.dir);
  return r;
}

std::vector<std::string> ours_log(const std::string& out) {
  size_t p = out.find("ours:\n"), e = out.find("log:\n");
  return p == std::string::npos || e == std::string::npos ? std::vector<std::string>{}
                                                          : e2e::lines(out.substr(p + 6, e - p - 6));
}

}  // namespace

TEST_CASE("step-aside: a client in a library loaded RTLD_LOCAL reaches its own libcupti, not vramtrace's copy") {
  Run r = run_local();
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "vramtrace_subscribed") == "1");
  CHECK(after(r.result.out, "client_subscribe") == "0");
  CHECK(after(r.result.out, "client_records") != "0");  // its flush (bound to its copy) found its callbacks
  auto theirs = fake_log(r.result.out);
  CHECK(index_of(theirs, "subscribe ok") != SIZE_MAX);
  CHECK(index_of(theirs, "register callbacks") != SIZE_MAX);
  auto ours = ours_log(r.result.out);
  CHECK(index_of(ours, "subscriber name vramtrace") != SIZE_MAX);
  CHECK(index_of(ours, "unsubscribe") != SIZE_MAX);
  CHECK(std::count(ours.begin(), ours.end(), "subscribe ok") == 1);  // only ours: the client's went to its copy
  // Our copy is finalised so theirs can attach: on vramtrace's thread, never the client's.
  CHECK(index_of(ours, "finalize on vramtrace-cupti") != SIZE_MAX);
  REQUIRE(r.traces.size() == 1);
  RecorderState st = actfix::load(r.traces[0]).index->recorder();
  CHECK(st.stepped_aside);
  CHECK(st.finalize == fmt::kCuptiFinalizeDone);
}

TEST_CASE("step-aside: kernels in flight: finalize waits for them, and is skipped if they never finish") {
  Run r = run_local({{"FAKECUPTI_IN_FLIGHT", "4"}});
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  auto ours = ours_log(r.result.out);
  size_t fin = index_of(ours, "finalize on vramtrace-cupti");
  REQUIRE(fin != SIZE_MAX);
  // Not before the forced flushes stopped handing over unfinished kernels.
  size_t forced = 0;
  for (size_t i = index_of(ours, "unsubscribe"); i < fin; ++i) forced += ours[i] == "flush forced";
  CHECK(forced >= 2);
  REQUIRE(r.traces.size() == 1);
  CHECK(actfix::load(r.traces[0]).index->recorder().finalize == fmt::kCuptiFinalizeDone);

  Run stuck = run_local({{"FAKECUPTI_IN_FLIGHT", "100000"}});
  INFO(stuck.result.out << stuck.result.err);
  CHECK(stuck.result.exit_code == 0);
  for (const auto& line : ours_log(stuck.result.out)) CHECK(line.rfind("finalize", 0) != 0);
  CHECK(stuck.result.err.find("kernels stayed in flight") != std::string::npos);
  REQUIRE(stuck.traces.size() == 1);
  CHECK(actfix::load(stuck.traces[0]).index->recorder().finalize == fmt::kCuptiFinalizeInFlight);
}

TEST_CASE("step-aside: our buffers completed after the handover never reach the new client, and are counted") {
  Run r = run_client("late", {{"FAKECUPTI_LATE_BUFFER", "1"}});
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(index_of(fake_log(r.result.out), "late buffer completed") != SIZE_MAX);
  CHECK(after(r.result.out, "client_foreign_buffers") == "0");
  CHECK(after(r.result.out, "client_records") != "0");  // theirs still pass through
  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  CHECK(l.index->recorder().handover_dropped == 1);  // the late kernel, not decoded
  for (const auto& k : l.index->kernels()) CHECK(l.index->kernel_name(k.name_id) != "_Z4latev");
}

TEST_CASE("step-aside: when the client lets go (torch.profiler window closes) vramtrace records again, with the gap") {
  Run r = run_client("window");
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(after(r.result.out, "client_unsubscribe") == "0");
  auto log = fake_log(r.result.out);
  size_t theirs = index_of(log, "subscribe ok", index_of(log, "subscribe ok") + 1);
  REQUIRE(theirs != SIZE_MAX);
  size_t back = index_of(log, "subscriber name vramtrace", theirs);
  REQUIRE(back != SIZE_MAX);
  CHECK(index_of(log, "enable 10", back) != SIZE_MAX);
  REQUIRE(r.traces.size() == 1);
  actfix::Loaded l = actfix::load(r.traces[0]);
  RecorderState st = l.index->recorder();
  CHECK(st.stepped_aside);
  CHECK(st.resumed);
  REQUIRE(st.gaps.size() == 1);
  CHECK(st.gaps[0].first == st.stepped_aside_ns);
  CHECK(st.gaps[0].second > st.gaps[0].first);
  size_t after_gap = 0;
  for (const auto& k : l.index->kernels()) after_gap += k.start_ns > st.gaps[0].second;
  CHECK(after_gap >= 2);
  CHECK(status_records(l, fmt::kCuptiStopped) == 1);  // ours again at exit
  std::string json_path = r.dir + "/out.json";
  e2e::Spec ex;
  ex.argv = {e2e::cli(), "export", "--perfetto", json_path, r.traces[0]};
  ex.preload = false;
  REQUIRE(e2e::run(ex).exit_code == 0);
  std::ifstream jf(json_path);
  nlohmann::json pj = nlohmann::json::parse(jf);
  const auto& ka = pj["otherData"]["kernel_activity"];
  REQUIRE(ka["gaps_us"].size() == 1);
  CHECK(ka["gaps_us"][0][1].get<double>() > ka["gaps_us"][0][0].get<double>());
  CHECK(ka["resumed"] == true);
  e2e::Spec rep;
  rep.argv = {e2e::cli(), "report", r.traces[0], "--format", "json"};
  rep.preload = false;
  e2e::Result er = e2e::run(rep);
  REQUIRE(er.exit_code == 0);
  CHECK(nlohmann::json::parse(er.out)["kernels"]["status"] ==
        "CUPTI recorded kernels, except while another client held it (1 gap)");
}

TEST_CASE("VRAMTRACE_CUPTI_MEMORY=0 leaves CUPTI's MEMORY2 kind off, the rest on") {
  Run off = run_client("plain", {{"VRAMTRACE_CUPTI_MEMORY", "0"}});
  INFO(off.result.out << off.result.err);
  CHECK(off.result.exit_code == 0);
  auto log = fake_log(off.result.out);
  CHECK(index_of(log, "enable 10") != SIZE_MAX);
  CHECK(index_of(log, "enable 49") == SIZE_MAX);
  REQUIRE(off.traces.size() == 1);
  actfix::Loaded l = actfix::load(off.traces[0]);
  CHECK(l.index->cupti_memory().empty());
  CHECK((l.index->recorder().kinds & fmt::kCuptiKindMemory) == 0);
  Run bad = run_client("plain", {{"VRAMTRACE_CUPTI_MEMORY", "maybe"}});
  CHECK(bad.result.err.find("bad VRAMTRACE_CUPTI_MEMORY 'maybe' (use 0 or 1)") != std::string::npos);
}

TEST_CASE("fidelity: CUPTI's device buffers get a figure (their cap per context) with its basis") {
  Run r = run_client("plain");
  REQUIRE(r.result.exit_code == 0);
  REQUIRE(r.traces.size() == 1);
  e2e::Spec rep;
  rep.argv = {e2e::cli(), "report", r.traces[0], "--format", "json"};
  rep.preload = false;
  e2e::Result er = e2e::run(rep);
  REQUIRE(er.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(er.out);
  INFO(j["peak"].dump());
  const auto& f = j["peak"]["by_device"][0]["fidelity"];
  REQUIRE(f.is_object());
  CHECK(f["cupti_buffers_bytes"] == 24 << 20);  // 8 x the fake's 3 MiB, one context
  CHECK(f["cupti_buffers_basis"] == "at most 8 device buffers of 3145728 bytes per context x 1 context");
  rep.argv = {e2e::cli(), "report", r.traces[0]};
  er = e2e::run(rep);
  CHECK(er.out.find("CUPTI buffers 24.0 MiB (at most 8 device buffers of 3145728 bytes per context x 1 context)") !=
        std::string::npos);
}

TEST_CASE("NVTX with plain LD_PRELOAD: the injection variable is set only when unset, and the extension forwarded") {
  Run r = run_client("nvtx");  // no NVTX_INJECTION64_PATH from the test, no `vramtrace run`
  INFO(r.result.out << r.result.err);
  CHECK(r.result.exit_code == 0);
  CHECK(index_of(fake_log(r.result.out), "nvtx injection") != SIZE_MAX);
  CHECK(r.result.err.empty());

  Run env = run_client("env");
  CHECK(after(env.result.out, "nvtx") == VT_LIBRARY);
  Run off = run_client("env", {{"VRAMTRACE_KERNELS", "0"}});
  CHECK(after(off.result.out, "nvtx") == "");
  Run theirs = run_client("env", {{"NVTX_INJECTION64_PATH", "/opt/tool/libnvtxinj.so"}});
  CHECK(after(theirs.result.out, "nvtx") == "/opt/tool/libnvtxinj.so");  // never replaced
  Run bare = run_client("env", {}, /*preload=*/false);
  CHECK(after(bare.result.out, "nvtx") == "");

  Run ext = run_client("nvtxext");
  INFO(ext.result.out << ext.result.err);
  CHECK(after(ext.result.out, "nvtx_ext") == "1");
  CHECK(index_of(fake_log(ext.result.out), "nvtx extension") != SIZE_MAX);
}

TEST_CASE("vramtrace run --no-cupti-memory: kernels on, CUPTI's allocation records off") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s;
  s.preload = false;
  s.env = {{"VRAMTRACE_CUPTI_LIBRARY", VT_FAKECUPTI}, {"VRAMTRACE_KERNELS", ""}};
  s.argv = {e2e::cli(), "run", "--no-cupti-memory", "-o", dir, "--", e2e::program("cupti_client"), "plain"};
  e2e::Result r = e2e::run(s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  auto log = fake_log(r.out);
  CHECK(index_of(log, "enable 10") != SIZE_MAX);
  CHECK(index_of(log, "enable 49") == SIZE_MAX);
}
