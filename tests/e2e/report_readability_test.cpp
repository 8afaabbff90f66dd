// Reports that read at a glance (issue 17): `vramtrace summary`, the live set at a chosen time
// (--at), CUresults by name, counted nouns, GPUs and memory kinds in words, times with the
// precision of the run, no negative timestamps in exports, and a job table where a killed rank
// stands out with its command.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <fstream>
#include <iterator>
#include <regex>

#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  return e2e::run(s);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string trace_of(const std::vector<std::string>& argv, std::string dir = "") {
  if (dir.empty()) dir = e2e::temp_dir();
  size_t before = e2e::files_in(dir).size();
  e2e::Result r = e2e::run({argv, {{"VRAMTRACE_OUTPUT", dir}, {"FAKECUDA_TOTAL_BYTES", "4GiB"}}});
  INFO(r.err);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == before + 1);
  return files.back();
}

}  // namespace

TEST_CASE("summary: one screen with the peak, what was left, the OOM and its verdict, sizes and the largest allocations") {
  std::string trace = trace_of({e2e::program("oom_scenarios"), "leak"});
  e2e::Result r = cli({"summary", trace});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("vramtrace summary: " + trace + "\n", 0) == 0);
  CHECK(std::regex_search(r.out, std::regex("\n  peak         [0-9.]+ [GM]iB on GPU 0 at [0-9.]+ (us|ms|s) \\([0-9]+% of its 4.00 GiB\\)\n")));
  CHECK(has(r.out, "               largest holder "));
  CHECK(has(r.out, "load_weights"));
  CHECK(std::regex_search(r.out, std::regex("\n  at the end   [0-9.]+ [GM]iB in [0-9]+ allocations never freed\n")));
  CHECK(has(r.out, "\n  OOMs         1 failed allocation: leak_growth\n"));
  CHECK(has(r.out, "CUDA_ERROR_OUT_OF_MEMORY: leak_growth at step_temp"));
  CHECK(std::regex_search(r.out, std::regex("\n  allocations  [0-9]+ allocations, [0-9.]+ [GM]iB in all; [0-9]+ freed during the run\n")));
  CHECK(has(r.out, "\nALLOCATION SIZES\n"));
  CHECK(has(r.out, "\nLARGEST ALLOCATIONS\n  256 MiB  cuMemAlloc_v2 on GPU 0 at "));
  CHECK(has(r.out, "never freed\n      load_weights"));
  CHECK(e2e::lines(r.out).size() <= 50);  // a screen

  r = cli({"summary", trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "vramtrace.summary/1");
  CHECK(j["peak"]["device"] == 0);
  CHECK(j["ooms"].size() == 1);
  CHECK(j["ooms"][0]["result_name"] == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(j["ooms"][0]["verdict"] == "leak_growth");
  CHECK(j["allocations"]["largest"][0]["bytes"] == 256ull << 20);
  uint64_t n = 0;
  for (const auto& b : j["allocations"]["size_histogram"]) n += b["count"].get<uint64_t>();
  CHECK(n == j["allocations"]["count"].get<uint64_t>());
  // The full report's JSON carries the same allocation figures.
  nlohmann::json full = nlohmann::json::parse(cli({"report", trace, "--format", "json"}).out);
  CHECK(full["allocations"] == j["allocations"]);
  // A directory: the job table, then each trace's summary.
  std::string dir = e2e::temp_dir();
  trace_of({e2e::program("lifecycle"), "exit-code", "0"}, dir);
  trace_of({e2e::program("oom_scenarios"), "steps", "3"}, dir);
  r = cli({"summary", dir});
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("vramtrace job report: 2 traces\n", 0) == 0);
  size_t summaries = 0;
  for (const std::string& l : e2e::lines(r.out)) summaries += l.rfind("vramtrace summary: ", 0) == 0;
  CHECK(summaries == 2);
  CHECK(cli({"summary", dir + "/nothing.trace"}).exit_code == 2);
  CHECK(cli({"summary", trace, "--format", "html"}).exit_code == 2);
}

TEST_CASE("the live set at a chosen time (--at), in text and JSON, past the end, and bad times refused") {
  // steps 3: weights, then three steps that each keep 8 MiB.
  std::string trace = trace_of({e2e::program("oom_scenarios"), "steps", "3"});
  nlohmann::json rep = nlohmann::json::parse(cli({"report", trace, "--format", "json"}).out);
  uint64_t t0 = std::min(rep["trace"]["start_monotonic_ns"].get<uint64_t>(), rep["trace"]["first_t_ns"].get<uint64_t>());
  uint64_t last = rep["trace"]["last_t_ns"].get<uint64_t>();
  // Halfway between the first and the last event, in ns since the start.
  uint64_t mid = (rep["trace"]["first_t_ns"].get<uint64_t>() + last) / 2 - t0;
  e2e::Result r = cli({"peak", trace, "--at", std::to_string(mid) + "ns", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.contains("live_at"));
  CHECK(j["live_at"]["t_ns"] == t0 + mid);
  CHECK_FALSE(j["live_at"]["past_end"].get<bool>());
  uint64_t at_mid = j["live_at"]["bytes"];
  CHECK(at_mid > 0);
  CHECK(at_mid <= j["peak"]["bytes"].get<uint64_t>());  // never above the peak
  uint64_t sum = 0;
  for (const auto& g : j["live_at"]["live_set"]) sum += g["bytes"].get<uint64_t>();
  CHECK(sum == at_mid);
  // Past the end: what was live at the end, said so.
  r = cli({"peak", trace, "--at", "1h"});
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "\nLIVE AT 3600"));
  CHECK(has(r.out, "(after the last event: what was live at the end)"));
  // Text: the section and the groups in the report's words.
  r = cli({"report", trace, "--at", std::to_string(mid / 1000) + "us"});
  INFO(r.out);
  CHECK(std::regex_search(r.out, std::regex("\nLIVE AT [0-9.]+ (us|ms|s)\n  GPU 0: [0-9.]+ [MG]iB device memory\n  #1  ")));
  for (std::string bad : {"-1s", "soon", "12 parsecs", "1e3", "inf", ""}) {
    r = cli({"report", trace, "--at", bad});
    INFO(bad);
    CHECK(r.exit_code == 2);
    CHECK(e2e::lines(r.err).size() == 1);
  }
}

TEST_CASE("text reports: CUresults by name, one allocation in the singular, GPUs and kinds in words, ms for a short run") {
  std::string trace = trace_of({e2e::program("oom_scenarios"), "too-big"});
  e2e::Result r = cli({"report", trace});
  INFO(r.out);
  CHECK(has(r.out, "failed: CUDA_ERROR_OUT_OF_MEMORY (2)\n"));
  CHECK_FALSE(has(r.out, "CUresult"));
  CHECK(has(r.out, " in 1 allocation ("));
  CHECK_FALSE(has(r.out, " in 1 allocations"));
  CHECK_FALSE(has(r.out, "1 more frames"));
  CHECK(has(r.out, ", device memory, GPU 0)"));
  CHECK_FALSE(has(r.out, ", device, device 0)"));
  CHECK(has(r.out, "\n  GPU 0: NVIDIA H200"));
  // A run of milliseconds is not "0.004 s": the unit follows the run's length, so a run under a
  // millisecond (the context is created before the trace opens, so the peak can be its first
  // event) says "us", a long one (a loaded machine) "s".
  CHECK(std::regex_search(r.out, std::regex("\n  GPU 0: [0-9.]+ MiB at [0-9]+\\.[0-9]+ (us|ms|s) ")));
  CHECK_FALSE(std::regex_search(r.out, std::regex(" at 0\\.0[0-9][0-9] s")));
  nlohmann::json j = nlohmann::json::parse(cli({"report", trace, "--format", "json"}).out);
  CHECK(j["ooms"][0]["result_name"] == "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST_CASE("export --perfetto: no timestamp before zero (the event that opened the trace was timed before its header)") {
  std::string trace = trace_of({e2e::program("lookup_direct")});
  std::string out = e2e::temp_dir() + "/p.json";
  e2e::Result r = cli({"export", "--perfetto", out, trace});
  REQUIRE(r.exit_code == 0);
  std::ifstream f(out);
  nlohmann::json j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
  size_t with_ts = 0;
  double lowest = 1e300;
  for (const auto& ev : j["traceEvents"])
    if (ev.contains("ts")) {
      ++with_ts;
      lowest = std::min(lowest, ev["ts"].is_string() ? std::stod(ev["ts"].get<std::string>()) : ev["ts"].get<double>());
    }
  // (Counter samples are one per interval: how many depends on how the events spread in time.)
  CHECK(with_ts > 5);
  CHECK(lowest >= 0);
  CHECK(lowest < 1);  // the first record is time zero
}

TEST_CASE("job table: a killed rank stands out, with the command of every rank") {
  std::string dir = e2e::temp_dir();
  trace_of({e2e::program("lifecycle"), "exit-code", "0"}, dir);
  e2e::run({{e2e::program("lifecycle"), "crash-kill", "3"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(e2e::files_in(dir).size() == 2);
  e2e::Result r = cli({"report", dir});
  INFO(r.out);
  std::string killed, clean;
  for (const std::string& l : e2e::lines(r.out)) {
    if (l.rfind("  -      ", 0) != 0) continue;  // the rows (no rank set)
    if (has(l, " KILLED ")) killed = l;
    if (has(l, " exit ")) clean = l;
  }
  CHECK(has(killed, e2e::program("lifecycle") + " crash-kill 3"));
  CHECK(has(clean, e2e::program("lifecycle") + " exit-code 0"));
  CHECK(has(r.out, "  rank   pid        peak          leaks         OOMs  end     verdict                  command\n"));
  CHECK(has(r.out, "1 process ended without a clean close (KILLED"));
  nlohmann::json j = nlohmann::json::parse(cli({"report", dir, "--format", "json"}).out);
  size_t n_killed = 0;
  for (const auto& row : j["ranks"]) {
    n_killed += row["end"] == "killed";
    CHECK(row["command"].get<std::string>().rfind(e2e::program("lifecycle"), 0) == 0);
  }
  CHECK(n_killed == 1);
}
