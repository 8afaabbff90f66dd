// `vramtrace check` and `vramtrace diff` as a CI job would use them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  return e2e::run(s);
}

std::string steps_trace(int steps) {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "steps", std::to_string(steps)}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  return e2e::files_in(dir).at(0);
}

// One run of oom_scenarios ARGS (RANK set when rank >= 0) into `dir`.
void scenario(const std::string& dir, std::vector<std::string> args, int rank = -1) {
  args.insert(args.begin(), e2e::program("oom_scenarios"));
  std::vector<std::pair<std::string, std::string>> env = {{"VRAMTRACE_OUTPUT", dir}};
  if (rank >= 0) env.push_back({"RANK", std::to_string(rank)});
  e2e::Result r = e2e::run({args, env});
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("check: passing limits exit 0, each broken limit is a line with actual vs allowed and exit 1") {
  std::string t = steps_trace(10);  // peak = 256 MiB weights + 9 x 8 MiB kept + the last 64 MiB temp = 392 MiB; leak 336 MiB
  e2e::Result r = cli({"check", t, "--max-peak", "1GiB", "--max-leak", "512MiB", "--no-oom"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("ok: every limit holds", 0) == 0);

  r = cli({"check", t, "--max-peak", "300MiB"});
  CHECK(r.exit_code == 1);
  REQUIRE(e2e::lines(r.out).size() == 1);
  CHECK(r.out.find("FAIL max_peak: peak 392 MiB (411041792 bytes) > allowed 300 MiB") == 0);

  r = cli({"check", t, "--max-leak", "100000000"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL max_leak: leaked 336 MiB (352321536 bytes) > allowed 95.4 MiB") == 0);

  r = cli({"check", t, "--max-peak", "300MB", "--max-leak", "1MiB", "--json"});
  CHECK(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ok"] == false);
  REQUIRE(j["violations"].size() == 2);
  CHECK(j["violations"][0]["rule"] == "max_peak");
  CHECK(j["violations"][0]["actual"] == 411041792.0);
  CHECK(j["violations"][0]["allowed"] == 300e6);
}

TEST_CASE("check: an OOM, bad sizes, missing files and missing limits") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "too-big"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  r = cli({"check", dir, "--no-oom"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL no_oom: 1 failed allocation (first: 1.00 TiB, verdict request_exceeds_device)") == 0);

  r = cli({"check", dir, "--max-peak", "lots"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: --max-peak: 'lots' is not a size (examples: 512MiB, 4GB, 1.5GiB, 1048576)\n");
  r = cli({"check", dir, "--max-leak", "4XB"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("'4XB' has an unknown unit") != std::string::npos);
  r = cli({"check", "/nonexistent/trace", "--no-oom"});
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  r = cli({"check", dir});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no limit given") != std::string::npos);
  r = cli({"check", dir, "--max-peak-growth", "5"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("need --baseline") != std::string::npos);
}

TEST_CASE("check and diff against a baseline: the site that leaks more is named") {
  std::string base = steps_trace(10), more = steps_trace(30);
  e2e::Result r = cli({"check", more, "--baseline", base, "--max-peak-growth", "10", "--max-site-growth", "50"});
  CHECK(r.exit_code == 1);
  auto l = e2e::lines(r.out);
  REQUIRE(l.size() == 2);
  CHECK(l[0].find("FAIL max_peak_growth: peak growth +40.8% (552 MiB vs baseline 392 MiB) > allowed +10.0%") == 0);
  CHECK(l[1].find("FAIL max_site_growth: site growth +222.2% at keep_history") == 0);
  CHECK(cli({"check", more, "--baseline", base, "--max-peak-growth", "50", "--max-site-growth", "250"}).exit_code == 0);

  r = cli({"diff", base, more, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["peak"]["change_bytes"] == 160 << 20);
  CHECK(j["leaks"]["change_bytes"] == 160 << 20);
  REQUIRE_FALSE(j["sites"].empty());
  CHECK(j["sites"][0]["site"].get<std::string>().find("keep_history") == 0);
  CHECK(j["sites"][0]["peak_change_bytes"] == 160 << 20);
  CHECK(j["sites"][0]["added"] == false);

  r = cli({"diff", base, more});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("peak: 392 MiB -> 552 MiB (+160 MiB)") == 0);
}

TEST_CASE("check and diff: two lines of one function are two sites, matched by their order") {
  // Keys leave lines out (code moves between versions); two allocations of one function were
  // one site, so 50+100 MiB against 100+50 MiB was "no change" and passed any site limit.
  std::string base = e2e::temp_dir(), now = e2e::temp_dir();
  scenario(base, {"two-lines", "50", "100"});
  scenario(now, {"two-lines", "100", "50"});
  e2e::Result r = cli({"check", now, "--baseline", base, "--max-site-growth", "10"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL max_site_growth: site growth +100.0% at two_lines") == 0);
  r = cli({"diff", base, now, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["sites"].size() == 2);
  CHECK(j["sites"][0]["peak_change_bytes"].get<int64_t>() * j["sites"][1]["peak_change_bytes"].get<int64_t>() ==
        -int64_t(50 << 20) * (50 << 20));  // one +50 MiB, the other -50 MiB
  CHECK(cli({"check", now, "--baseline", now, "--max-site-growth", "0"}).exit_code == 0);  // the same: no change
}

TEST_CASE("check and diff of jobs: rank with rank, and growth from an empty baseline breaks the limit") {
  std::string base = e2e::temp_dir(), now = e2e::temp_dir();
  // Rank 1 grows 4x; rank 0 has the highest peak on both sides and does not change.
  scenario(base, {"steps", "40"}, 0);
  scenario(base, {"steps", "2"}, 1);
  scenario(now, {"steps", "40"}, 0);
  scenario(now, {"steps", "8"}, 1);
  e2e::Result r = cli({"check", now, "--baseline", base, "--max-peak-growth", "10"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL max_peak_growth: rank 1: peak growth +14.6% (376 MiB vs baseline 328 MiB)") == 0);
  CHECK(e2e::lines(r.out).size() == 1);  // rank 0 did not change
  r = cli({"diff", base, now});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("comparing rank 0, ") == 0);  // the rank with the highest peak now, named
  // A baseline whose peak is 0 B (its only allocation failed): any peak now is growth.
  std::string empty = e2e::temp_dir();
  scenario(empty, {"only-oom"});
  r = cli({"check", now, "--baseline", empty, "--max-peak-growth", "1000"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("peak growth from 0 B") != std::string::npos);
}

namespace {

// A run of the stand-in PyTorch (tests/e2e/torch_gate_workload.py): its trace, and PyTorch's
// peaks as the stand-in's own figures give them (memory_stats()'s allocated and reserved).
struct TorchRun {
  std::string trace;
  uint64_t peak_allocated = 0, peak_reserved = 0;
};

TorchRun torch_run(int scale, std::vector<std::string> flags = {}) {
  std::string dir = e2e::temp_dir();
  std::vector<std::string> argv = {"python3", std::string(VT_E2E_SOURCE_DIR) + "/torch_gate_workload.py",
                                   std::string(VT_PROGRAMS) + "/../torch/default", std::to_string(scale)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  e2e::Result r = e2e::run({argv, {{"VRAMTRACE_OUTPUT", dir}, {"FAKECUDA_CONTEXT_BYTES", "0"}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  return {e2e::files_in(dir).at(0), j["peak_allocated"].get<uint64_t>(), j["peak_reserved"].get<uint64_t>()};
}

}  // namespace

TEST_CASE("check --max-allocated / --max-reserved judge PyTorch's peaks, --max-peak says it judges the driver's") {
  // 40 + 24 MiB of tensors, the 24 freed, 30 more in a new segment: allocated peaks at 70 MiB,
  // reserved at 94 MiB; 16 MiB outside PyTorch make the driver's peak 110 MiB.
  TorchRun t = torch_run(1);
  REQUIRE(t.peak_allocated == 70 << 20);
  REQUIRE(t.peak_reserved == 94 << 20);
  const std::string pa = std::to_string(t.peak_allocated), pr = std::to_string(t.peak_reserved);
  e2e::Result r = cli({"check", t.trace, "--max-allocated", pa, "--max-reserved", pr});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("ok: every limit holds", 0) == 0);

  r = cli({"check", t.trace, "--max-allocated", std::to_string(t.peak_allocated - 1), "--max-reserved", pr});
  CHECK(r.exit_code == 1);
  REQUIRE(e2e::lines(r.out).size() == 1);
  CHECK(r.out.rfind("FAIL max_allocated: PyTorch's peak allocated 70.0 MiB (73400320 bytes) on GPU 0 "
                    "(max_memory_allocated: live tensors) > allowed 70.0 MiB in ",
                    0) == 0);
  CHECK(r.out.find("max_memory_allocated") != std::string::npos);

  r = cli({"check", t.trace, "--max-reserved", std::to_string(t.peak_reserved - 1)});
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL max_reserved: PyTorch's peak reserved 94.0 MiB (98566144 bytes)", 0) == 0);

  // The driver's figure, said to be the driver's: PyTorch's reserved plus memory outside it.
  r = cli({"check", t.trace, "--max-peak", "100MiB"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL max_peak: peak 110 MiB (115343360 bytes) > allowed 100 MiB in ", 0) == 0);
  CHECK(r.out.find("device memory as the driver saw it (PyTorch's reserved, which peaked at 94.0 MiB, plus memory "
                   "outside PyTorch); --max-allocated and --max-reserved judge PyTorch's own figures") != std::string::npos);

  r = cli({"check", t.trace, "--max-peak", "100MiB", "--max-allocated", "1MiB", "--json"});
  CHECK(r.exit_code == 1);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["violations"].size() == 2);
  CHECK(j["violations"][0]["rule"] == "max_peak");
  CHECK(j["violations"][0]["figure"] == "driver_peak");
  CHECK(j["violations"][1]["rule"] == "max_allocated");
  CHECK(j["violations"][1]["figure"] == "pytorch_peak_allocated");
  CHECK(j["violations"][1]["actual"] == double(70 << 20));
}

TEST_CASE("check: limits on PyTorch's figures refuse a trace without them (exit 2, one line)") {
  std::string plain = steps_trace(2);
  e2e::Result r = cli({"check", plain, "--max-allocated", "1GiB"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  REQUIRE(e2e::lines(r.err).size() == 1);
  CHECK(r.err.find("vramtrace: check: --max-allocated needs PyTorch's block figures (allocated, reserved); ") == 0);
  CHECK(r.err.find(" has none: no PyTorch in this process (--max-peak judges device memory as the driver saw it)") !=
        std::string::npos);
  r = cli({"check", plain, "--max-reserved", "1GiB", "--max-peak", "1GiB"});
  CHECK(r.exit_code == 2);
  // Growth of PyTorch's figures needs them on both sides.
  TorchRun t = torch_run(1);
  r = cli({"check", t.trace, "--baseline", plain, "--max-allocated-growth", "5"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--max-allocated-growth needs PyTorch's block figures") != std::string::npos);
  CHECK(cli({"check", t.trace, "--baseline", plain, "--max-peak-growth", "1000"}).exit_code == 0);
}

TEST_CASE("check --max-leak with PyTorch: its pinned host cache is no leak, the program's own pinned memory is") {
  TorchRun clean = torch_run(1);
  e2e::Result r = cli({"check", clean.trace, "--max-leak", "0"});
  CHECK(r.exit_code == 0);
  r = cli({"leaks", clean.trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["leaks"]["bytes"] == 0);
  CHECK(j["leaks"]["pytorch_host_cache"] == nlohmann::json{{"bytes", 4}, {"count", 1}});
  r = cli({"leaks", clean.trace});
  CHECK(r.out.find("not counted as leaks: PyTorch's pinned host memory cache (its CachingHostAllocator keeps pinned "
                   "blocks until exit) holds 4 B in 1 allocation") != std::string::npos);

  TorchRun mine = torch_run(1, {"user_pinned"});
  r = cli({"check", mine.trace, "--max-leak", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL max_leak: leaked 4.00 KiB (4096 bytes) > allowed 0 B in ", 0) == 0);
  CHECK(r.out.find("PyTorch's tensors still allocated at the end and memory outside PyTorch (its caches are not counted)") !=
        std::string::npos);
  r = cli({"leaks", mine.trace, "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["leaks"]["pytorch_host_cache"]["bytes"] == 4);
  REQUIRE(j["leaks"]["groups"].size() == 1);
  CHECK(j["leaks"]["groups"][0]["kind"] == "pinned_host");

  TorchRun kept = torch_run(1, {"leak_tensor"});
  r = cli({"check", kept.trace, "--max-leak", "0"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("FAIL max_leak: leaked 1.00 MiB (1048576 bytes)", 0) == 0);
}

TEST_CASE("diff and check --baseline compare PyTorch's peaks when both runs have them") {
  TorchRun base = torch_run(1), now = torch_run(2);
  e2e::Result r = cli({"diff", base.trace, now.trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["pytorch"]["peak_allocated"] ==
        nlohmann::json{{"base_bytes", 70 << 20}, {"new_bytes", 140 << 20}, {"change_bytes", 70 << 20}});
  CHECK(j["pytorch"]["peak_reserved"]["change_bytes"] == 94 << 20);
  CHECK(j["peak"]["change_bytes"] == 94 << 20);  // the driver's: the 16 MiB outside did not change
  r = cli({"diff", base.trace, now.trace});
  REQUIRE(r.exit_code == 0);
  auto l = e2e::lines(r.out);
  REQUIRE(l.size() >= 4);
  CHECK(l[0] == "peak: 110 MiB -> 204 MiB (+94.0 MiB), device memory as the driver saw it (PyTorch's reserved plus "
                "memory outside PyTorch)");
  CHECK(l[1] == "PyTorch's peak allocated: 70.0 MiB -> 140 MiB (+70.0 MiB) (max_memory_allocated: live tensors)");
  CHECK(l[2] == "PyTorch's peak reserved: 94.0 MiB -> 188 MiB (+94.0 MiB) (max_memory_reserved: its segments)");
  // Without block figures on one side: the driver's peak only.
  r = cli({"diff", steps_trace(2), now.trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(nlohmann::json::parse(r.out).contains("pytorch"));

  r = cli({"check", now.trace, "--baseline", base.trace, "--max-allocated-growth", "50", "--max-reserved-growth", "150"});
  CHECK(r.exit_code == 1);
  REQUIRE(e2e::lines(r.out).size() == 1);
  CHECK(r.out.rfind("FAIL max_allocated_growth: PyTorch's peak allocated growth +100.0% (140 MiB vs baseline 70.0 MiB) "
                    "> allowed +50.0%",
                    0) == 0);
  r = cli({"check", now.trace, "--baseline", base.trace, "--max-reserved-growth", "50", "--json"});
  CHECK(r.exit_code == 1);
  j = nlohmann::json::parse(r.out);
  REQUIRE(j["violations"].size() == 1);
  CHECK(j["violations"][0]["rule"] == "max_reserved_growth");
  CHECK(j["violations"][0]["figure"] == "pytorch_peak_reserved");
  CHECK(cli({"check", now.trace, "--baseline", base.trace, "--max-allocated-growth", "100"}).exit_code == 0);
}
