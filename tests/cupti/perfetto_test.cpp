// The Perfetto / chrome://tracing export of a trace holding memory events and kernel activity:
// valid JSON, the expected tracks, counters and instants, and the aggregation policy.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "activity_fixture.h"
#include "perfetto_export.h"
#include "recorder.h"
#include "synthetic_buffer.h"
#include "trace_fixture.h"

using nlohmann::json;

namespace {

vt::Event ev(vt::HookId op, uint64_t t, uint64_t addr, uint64_t size) {
  vt::Event e;
  e.set_op(op);
  e.t_ns = t;
  e.device = 0;
  e.context = 0x5000;
  if (addr) e.set_addr(addr);
  if (size) e.set_size(size);
  return e;
}

std::string g_path;

// One trace for all cases: memory events and activity 1 us apart from a common start.
void write_fixture() {
  if (!g_path.empty()) return;
  g_path = fixture::temp_dir() + "/perfetto.trace";
  int st = fixture::write_trace(g_path, [] {
    uint64_t t0 = vt::now_ns();
    vt::record(ev(vt::HookId::cuMemAlloc_v2, t0, 0x7f0000000000ull, 128ull << 20));  // drawn
    for (int i = 0; i < 1000; ++i)                                                     // not drawn one by one
      vt::record(ev(vt::HookId::cuMemAlloc_v2, t0 + 10000 + uint64_t(i) * 50, 0x7e0000000000ull + uint64_t(i) * 4096, 1024));
    vt::Event oom = ev(vt::HookId::cuMemAlloc_v2, t0 + 100000, 0, 1ull << 40);
    oom.result = 2;
    oom.free_bytes = 1 << 30;
    oom.total_bytes = 16ull << 30;
    vt::record(oom);
    vt::record(ev(vt::HookId::cuMemFree_v2, t0 + 200000, 0x7f0000000000ull, 0));

    vt::cupti::ClockAlign clock;
    actfix::set_offset(&clock, 0);
    vt::cupti::NameTable names;
    vt::cupti::Encoder enc(actfix::trace_base(), &clock, &names, {actfix::trace_sink_write, nullptr});
    alignas(8) static uint8_t buf[1 << 16];
    synth::Builder b{buf, sizeof buf};
    b.kernel("_Z9fake_gemmPfS_S_i", t0 + 1000, t0 + 5000, 7, 1);
    b.kernel("_Z9fake_reluPfi", t0 + 6000, t0 + 6100, 7, 2);
    b.kernel("_Z9fake_reluPfi", t0 + 6200, t0 + 6300, 7, 3);
    b.memcpy_rec(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, t0 + 500, t0 + 900, 9);
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, t0, 42, "train_step");
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, t0 + 150000, 42, nullptr);
    enc.decode_buffer(buf, b.len, synth::next_record);
  });
  REQUIRE(WIFEXITED(st));
}

json export_json(const vt::analyzer::PerfettoOptions& opt, vt::analyzer::PerfettoStats* stats) {
  std::ostringstream out;
  std::string err;
  REQUIRE(vt::analyzer::export_perfetto(g_path, out, opt, stats, &err));
  json j = json::parse(out.str());  // throws (fails the test) on invalid JSON
  return j;
}

std::vector<json> of(const json& j, const std::string& ph, const std::string& name = "") {
  std::vector<json> v;
  for (const json& e : j["traceEvents"])
    if (e["ph"] == ph && (name.empty() || e.value("name", "") == name)) v.push_back(e);
  return v;
}

}  // namespace

TEST_CASE("the Perfetto export is valid trace-event JSON with the expected tracks") {
  write_fixture();
  vt::analyzer::PerfettoOptions opt;
  opt.stacks = false;
  vt::analyzer::PerfettoStats stats;
  json j = export_json(opt, &stats);
  REQUIRE(j.contains("traceEvents"));
  CHECK(j["displayTimeUnit"] == "ns");

  // Processes: the GPU and the host; a named track per stream.
  bool gpu = false, host = false, stream7 = false;
  for (const json& m : of(j, "M")) {
    std::string n = m["args"].value("name", "");
    if (m["name"] == "process_name" && n.rfind("GPU 0", 0) == 0) gpu = true;
    if (m["name"] == "process_name" && n.rfind("host:", 0) == 0) host = true;
    if (m["name"] == "thread_name" && m["pid"] == 0 && m["tid"] == 7 && n == "stream 7") stream7 = true;
  }
  CHECK(gpu);
  CHECK(host);
  CHECK(stream7);

  // Kernels: slices on (device, stream), demangled, microseconds with ns decimals.
  auto gemm = of(j, "X", "fake_gemm(float*, float*, float*, int)");
  REQUIRE(gemm.size() == 1);
  CHECK(gemm[0]["pid"] == 0);
  CHECK(gemm[0]["tid"] == 7);
  CHECK(gemm[0]["dur"].get<double>() == Approx(4.0));
  CHECK(gemm[0]["args"]["grid"] == "128,2,1");
  CHECK(of(j, "X", "fake_relu(float*, int)").size() == 2);
  auto copy = of(j, "X", "Memcpy HtoD 1.00 MiB");
  REQUIRE(copy.size() == 1);
  CHECK(copy[0]["tid"] == 9);
  CHECK(gemm[0]["ts"].get<double>() - copy[0]["ts"].get<double>() == Approx(0.5));

  // NVTX range on the host process, thread 42.
  auto step = of(j, "X", "train_step");
  REQUIRE(step.size() == 1);
  CHECK(step[0]["tid"] == 42);
  CHECK(step[0]["cat"] == "nvtx");
  CHECK(step[0]["dur"].get<double>() == Approx(150.0));

  // Counters: live device bytes, peak 128 MiB + 1000 KiB visible.
  auto counters = of(j, "C", "driver memory");
  REQUIRE(!counters.empty());
  uint64_t peak = 0;
  for (const json& c : counters) peak = std::max(peak, c["args"]["device"].get<uint64_t>());
  CHECK(peak == (128ull << 20) + 1000 * 1024);
  CHECK(counters.back()["args"]["device"] == 1000 * 1024);  // the 128 MiB was freed

  // Instants: the big allocation and the failure; the 1000 small ones are only in the counters.
  auto inst = of(j, "i");
  int drawn = 0, failed = 0;
  for (const json& e : inst) {
    if (e["cat"] == "allocation") drawn++;
    if (e["cat"] == "oom") {
      failed++;
      CHECK(e["args"]["result"] == 2);
      CHECK(e["args"]["free_bytes"] == (1ull << 30));
      CHECK(e["name"] == "FAILED cuMemAlloc_v2 1.00 TiB");
    }
  }
  CHECK(drawn == 1);
  CHECK(failed == 1);
  CHECK(stats.allocations_not_drawn == 1000);
  CHECK(j["otherData"]["policy"]["allocations_not_drawn"] == 1000);
  CHECK(j["otherData"]["kernel_activity"]["recorded"] == false);  // kernels were off in the fixture
}

TEST_CASE("counter samples are thinned to the max and the last per interval") {
  write_fixture();
  vt::analyzer::PerfettoOptions opt;
  opt.stacks = false;
  opt.counter_interval_ns = 1'000'000;  // 1 ms: the whole 50 us burst is one window
  vt::analyzer::PerfettoStats coarse;
  json j = export_json(opt, &coarse);
  opt.counter_interval_ns = 1;
  vt::analyzer::PerfettoStats fine;
  export_json(opt, &fine);
  CHECK(fine.counter_samples >= 1002);
  CHECK(coarse.counter_samples <= 6);
  uint64_t peak = 0;
  for (const json& c : of(j, "C", "driver memory")) peak = std::max(peak, c["args"]["device"].get<uint64_t>());
  CHECK(peak == (128ull << 20) + 1000 * 1024);  // thinning never loses the peak
}

TEST_CASE("short kernels merge per stream when a minimum slice length is set") {
  write_fixture();
  vt::analyzer::PerfettoOptions opt;
  opt.stacks = false;
  opt.min_slice_ns = 500;
  vt::analyzer::PerfettoStats stats;
  json j = export_json(opt, &stats);
  CHECK(of(j, "X", "fake_relu(float*, int)").empty());
  auto merged = of(j, "X", "2 kernels (each < 0.500 us)");
  REQUIRE(merged.size() == 1);
  CHECK(merged[0]["args"]["count"] == 2);
  CHECK(merged[0]["dur"].get<double>() == Approx(0.3));
  CHECK(of(j, "X", "fake_gemm(float*, float*, float*, int)").size() == 1);  // long ones stay
  CHECK(stats.merged_slices == 1);
}

TEST_CASE("export to a file, and a missing trace is one error line") {
  write_fixture();
  std::string out = fixture::temp_dir() + "/out.json";
  std::string err;
  vt::analyzer::PerfettoOptions opt;
  CHECK(vt::analyzer::export_perfetto_file(g_path, out, opt, &err) == 0);
  std::ifstream f(out);
  CHECK(json::parse(f)["traceEvents"].size() > 10);
  CHECK(vt::analyzer::export_perfetto_file("/nonexistent.trace", out + "2", opt, &err) == 1);
  CHECK_FALSE(err.empty());
}

TEST_CASE("equal big allocations in one counter interval are one instant with their count") {
  std::string path = fixture::temp_dir() + "/perfetto_big.trace";
  int st = fixture::write_trace(path, [] {
    uint64_t t0 = vt::now_ns();
    t0 -= t0 % 100'000;  // the first interval starts here
    uint64_t a = 0x7f0000000000ull;
    for (int i = 0; i < 10; ++i) vt::record(ev(vt::HookId::cuMemAlloc_v2, t0 + 1000 + uint64_t(i) * 1000, a += 1ull << 30, 128ull << 20));
    for (int i = 0; i < 3; ++i) vt::record(ev(vt::HookId::cuMemAlloc_v2, t0 + 20000 + uint64_t(i) * 1000, a += 1ull << 30, 256ull << 20));
    for (int i = 0; i < 5; ++i) vt::record(ev(vt::HookId::cuMemAlloc_v2, t0 + 300000 + uint64_t(i) * 1000, a += 1ull << 30, 128ull << 20));
  });
  REQUIRE(WIFEXITED(st));
  vt::analyzer::PerfettoOptions opt;
  opt.stacks = false;
  vt::analyzer::PerfettoStats stats;
  std::ostringstream out;
  std::string err;
  REQUIRE(vt::analyzer::export_perfetto(path, out, opt, &stats, &err));
  json j = json::parse(out.str());
  std::vector<std::pair<std::string, uint64_t>> drawn;  // (name, count) in time order
  std::vector<json> inst = of(j, "i");
  std::sort(inst.begin(), inst.end(), [](const json& x, const json& y) { return x["ts"].get<double>() < y["ts"].get<double>(); });
  for (const json& e : inst) drawn.push_back({e["name"], e["args"]["count"]});
  std::vector<std::pair<std::string, uint64_t>> want = {
      {"cuMemAlloc_v2 128 MiB", 10}, {"cuMemAlloc_v2 256 MiB", 3}, {"cuMemAlloc_v2 128 MiB", 5}};
  CHECK(drawn == want);
  CHECK(stats.instants == 3);
  CHECK(stats.allocations_merged == 9 + 2 + 4);
  CHECK(j["otherData"]["policy"]["allocations_merged"] == 15);
  REQUIRE(j.contains("stackFrames"));  // present (empty without stacks): consumers may rely on it
  // The first of each group is drawn: its time and address.
  CHECK(inst[0]["args"]["address"] == "0x7f0040000000");
  // An interval of 0 draws every big allocation.
  opt.counter_interval_ns = 0;
  vt::analyzer::PerfettoStats each;
  std::ostringstream out2;
  REQUIRE(vt::analyzer::export_perfetto(path, out2, opt, &each, &err));
  CHECK(each.instants == 18);
  CHECK(each.allocations_merged == 0);
}

TEST_CASE("a retry loop of failures is one oom instant per interval, with its count and free/total") {
  std::string path = fixture::temp_dir() + "/perfetto_retry.trace";
  int st = fixture::write_trace(path, [] {
    uint64_t t0 = vt::now_ns();
    t0 -= t0 % 100'000;
    for (int i = 0; i < 50; ++i) {  // 50 retries in one interval, then one more in the next
      vt::Event e = ev(vt::HookId::cuMemAlloc_v2, t0 + 100 + uint64_t(i) * 100, 0, 1ull << 40);
      e.result = 2;
      e.free_bytes = 1ull << 30;
      e.total_bytes = 16ull << 30;
      vt::record(e);
    }
    vt::Event late = ev(vt::HookId::cuMemAlloc_v2, t0 + 150'000, 0, 1ull << 40);
    late.result = 2;
    vt::record(late);
    vt::record(ev(vt::HookId::cuMemAlloc_v2, t0 + 200, 0x7f0000000000ull, 1ull << 40));  // a success of that size: apart
  });
  REQUIRE(WIFEXITED(st));
  vt::analyzer::PerfettoOptions opt;
  opt.stacks = false;
  vt::analyzer::PerfettoStats stats;
  std::ostringstream out;
  std::string err;
  REQUIRE(vt::analyzer::export_perfetto(path, out, opt, &stats, &err));
  json j = json::parse(out.str());
  std::vector<uint64_t> oom_counts;
  int ok = 0;
  for (const json& e : of(j, "i")) {
    if (e["cat"] == "oom") {
      oom_counts.push_back(e["args"]["count"]);
      CHECK(e["name"] == "FAILED cuMemAlloc_v2 1.00 TiB");
    }
    if (e["cat"] == "allocation") ok++;
  }
  std::sort(oom_counts.begin(), oom_counts.end());
  CHECK(oom_counts == std::vector<uint64_t>{1, 50});
  CHECK(ok == 1);
  CHECK(stats.allocations_merged == 49);
}
