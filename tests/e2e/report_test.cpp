// End to end through the simulated driver: programs that run out of memory for each reason get
// the right verdict naming the right call site; a leak is attributed to its function; a job
// directory gives one row per process. Uses `vramtrace report --format json` as a user would.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "figures.h"
#include "harness.h"

using nlohmann::json;

namespace {

json report(const std::string& path, const std::string& section = "report") {
  e2e::Spec s{{e2e::cli(), section, path, "--format", "json"}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

bool stack_has(const json& stack, const std::string& function) {
  for (const auto& f : stack)
    if (f["function"].get<std::string>().find(function) != std::string::npos) return true;
  return false;
}

std::string scenario(const std::string& mode, std::vector<std::pair<std::string, std::string>> env) {
  std::string dir = e2e::temp_dir();
  env.push_back({"VRAMTRACE_OUTPUT", dir});
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), mode}, env});
  INFO(mode << ": " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  return files[0];
}

}  // namespace

TEST_CASE("each OOM gets the verdict that explains it, naming the call site") {
  struct Case {
    std::string mode, verdict, requested_at;
    std::vector<std::pair<std::string, std::string>> env;
  };
  std::vector<Case> cases = {
      {"too-big", "request_exceeds_device", "big_request", {}},
      // With the simulated context's default cost (512 MiB), made while "other processes" held
      // 6 GiB: its cost, measured only after it, takes them in (split_unattributed).
      {"others", "other_processes", "big_request", {{"FAKECUDA_TOTAL_BYTES", "8GiB"}, {"FAKECUDA_FOREIGN_BYTES", "6GiB"}}},
      {"leak", "leak_growth", "", {{"FAKECUDA_TOTAL_BYTES", "4GiB"}}},
      // Sized for a device without context overhead (oom_scenarios.cpp).
      {"live-set", "live_set_too_large", "big_request",
       {{"FAKECUDA_TOTAL_BYTES", "4GiB"}, {"FAKECUDA_CONTEXT_BYTES", "0"}}},
      {"fragmentation", "fragmentation", "big_from_pool", {{"FAKECUDA_TOTAL_BYTES", "4GiB"}}},
      // The pool's maxSize, not the device (which has room): was judged fragmentation.
      {"pool-limit", "pool_limit", "big_from_pool", {}},
  };
  for (const Case& c : cases) {
    INFO(c.mode);
    json j = report(scenario(c.mode, c.env), "oom");
    REQUIRE(j["ooms"].size() == 1);
    const json& o = j["ooms"][0];
    CHECK(o["verdict"] == c.verdict);
    CHECK(o["causes"][0]["code"] == c.verdict);
    CHECK_FALSE(o["causes"][0]["evidence"].empty());
    CHECK_FALSE(o["remedies"].empty());
    CHECK(o["requested_bytes"].get<uint64_t>() > 0);
    CHECK(o["device_total_bytes"].get<uint64_t>() > 0);
    if (!c.requested_at.empty()) CHECK(stack_has(o["stack"], c.requested_at));
    if (c.mode == "leak") {
      REQUIRE_FALSE(o["grew_before"].empty());
      CHECK(stack_has(o["grew_before"][0]["stack"], "keep_history"));
    }
    if (c.mode == "others") {
      // Without NVML the trace cannot tell the first context from the 6 GiB of others it was
      // made beside: all of it stays "other", said to be possibly the context, never taken off.
      const uint64_t context = 512ull << 20, first = (6ull << 30) + context;
      CHECK(o["code_after_only_bytes"] == first);
      CHECK(o["elsewhere_bytes"] == first);
      CHECK(o["elsewhere_unsure_bytes"] == first);
      CHECK(o["own_code_bytes"] == 0);
      CHECK(o["own_code_basis"] == "");  // nothing was measured with a reading before it
      CHECK(o["causes"][0]["evidence"]["other_bytes"] == first);
      CHECK(o["causes"][0]["evidence"]["first_context_unsure_bytes"] == first);
      CHECK(o["causes"][0]["summary"].get<std::string>().find("first context") != std::string::npos);
    }
    if (c.mode == "live-set") CHECK(stack_has(o["top_holders"][0]["stack"], "load_weights"));
    if (c.mode == "fragmentation") CHECK(o["pool_cached_bytes"] == (3ull << 30) - (48ull << 20));  // less the pins
    if (c.mode == "pool-limit") {
      CHECK(o["causes"][0]["evidence"]["pool_max_bytes"] == 256ull << 20);
      CHECK(o["causes"][0]["evidence"]["pool_held_bytes"] == 256ull << 20);
      CHECK(o["remedies"][0].get<std::string>().find("maxSize of 256 MiB") != std::string::npos);
    }
  }
}

TEST_CASE("a leak is reported at its call site, and the peak with its live set") {
  json j = report(scenario("leak", {{"FAKECUDA_TOTAL_BYTES", "4GiB"}}));
  CHECK(j["schema"] == "vramtrace.report/1");
  // The process exits without freeing: everything kept is a leak at exit.
  CHECK(j["leaks"]["end"] == "clean_exit");
  REQUIRE_FALSE(j["leaks"]["groups"].empty());
  CHECK(stack_has(j["leaks"]["groups"][0]["stack"], "keep_history"));
  CHECK(j["leaks"]["bytes"].get<uint64_t>() > (3ull << 30));
  REQUIRE_FALSE(j["leaks"]["growth"].empty());
  CHECK(stack_has(j["leaks"]["growth"][0]["stack"], "keep_history"));
  // Peak: the device was nearly full just before the failure.
  CHECK(j["peak"]["bytes"].get<uint64_t>() > (3ull << 30));
  CHECK(j["peak"]["bytes"].get<uint64_t>() <= (4ull << 30));
  CHECK(j["peak"]["device"] == 0);
  REQUIRE(j["peak"]["live_set"].size() >= 2);
  CHECK(stack_has(j["peak"]["live_set"][0]["stack"], "keep_history"));
  CHECK(j["peak"]["live_set"][0]["share"].get<double>() > 0.8);
  CHECK(j["timeline"].size() >= 1);
}

TEST_CASE("fragmentation section: pool footprint, live bytes and largest free gap") {
  json j = report(scenario("fragmentation", {{"FAKECUDA_TOTAL_BYTES", "4GiB"}}), "frag");
  REQUIRE(j["fragmentation"]["pools"].size() == 1);
  const json& p = j["fragmentation"]["pools"][0];
  CHECK(p["footprint_bytes"] == 3ull << 30);
  CHECK(p["live_bytes"] == 48ull << 20);  // the pins
  // The driver's longest free range: each freed 63 MiB block, pinned apart from the next.
  CHECK(p["largest_free_gap_bytes"] == 63ull << 20);
  CHECK(p["fragmentation"].get<double>() > 0.9);  // 1 - 63 MiB / 2.95 GiB free
}

TEST_CASE("a directory of traces is one job with a row per process") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("lifecycle"), "fork"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  json j = report(dir);
  REQUIRE(j["ranks"].size() == 2);
  REQUIRE(j["reports"].size() == 2);
  uint64_t peaks = j["ranks"][0]["peak_bytes"].get<uint64_t>() + j["ranks"][1]["peak_bytes"].get<uint64_t>();
  CHECK(peaks == (4ull << 20) + (2ull << 20));  // parent 1+3 MiB, child 2 MiB
  CHECK(j["job"]["imbalance"].get<double>() > 1.0);

  e2e::Spec s{{e2e::cli(), "report", dir}, {}};
  s.preload = false;
  r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("vramtrace job report: 2 traces") != std::string::npos);
}

TEST_CASE("report: bad input is one line and a non-zero exit") {
  e2e::Spec s{{e2e::cli(), "report", "/nonexistent.trace"}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  s.argv = {e2e::cli(), "report", "/tmp", "--format", "xml"};
  r = e2e::run(s);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--format must be text, json or html") != std::string::npos);
  std::string empty = e2e::temp_dir();
  s.argv = {e2e::cli(), "report", empty};
  r = e2e::run(s);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no vramtrace traces") != std::string::npos);
}

TEST_CASE("with NVML, other_processes names the processes that hold the device") {
  std::string pid1_bytes = std::to_string(5ull << 30), other_bytes = std::to_string(1ull << 30);
  std::string trace = scenario("others", {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                                          {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                                          {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                                          {"FAKENVML_PROCESSES", "1:" + pid1_bytes + ",999999:" + other_bytes}});
  json j = report(trace, "oom");
  REQUIRE(j["ooms"].size() == 1);
  const json& o = j["ooms"][0];
  CHECK(o["nvml"] == true);
  REQUIRE(o["other_processes"].size() == 2);
  CHECK(o["other_processes"][0]["pid"] == 1);
  CHECK(o["other_processes"][0]["bytes"] == 5ull << 30);
  CHECK_FALSE(o["other_processes"][0]["name"].get<std::string>().empty());  // from /proc/1/comm
  CHECK(o["verdict"] == "other_processes");
  CHECK(o["causes"][0]["summary"].get<std::string>().find("pid 1 (") != std::string::npos);
  CHECK(o["causes"][0]["evidence"]["other_bytes"] == 6ull << 30);
  CHECK_FALSE(o["causes"][0]["evidence"].contains("first_context_unsure_bytes"));
}

namespace {

json oom_of(const json& j) {
  REQUIRE(j["ooms"].size() == 1);
  return j["ooms"][0];
}
std::string text_report(const std::string& trace) {
  e2e::Spec s{{e2e::cli(), "report", trace}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  REQUIRE(r.exit_code == 0);
  return r.out;
}
std::string device_line(const std::string& text) {
  size_t at = text.find("     GPU: ");
  REQUIRE(at != std::string::npos);
  return text.substr(at, text.find('\n', at) - at);
}

}  // namespace

TEST_CASE("a first context made while another process held memory: NVML's row for this process tells them apart") {
  const uint64_t context = 512ull << 20, foreign = 6ull << 30;
  std::string trace = scenario("others", {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                                          {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                                          {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                                          {"FAKENVML_PROCESSES", "999999:" + std::to_string(foreign)}});
  json o = oom_of(report(trace, "oom"));
  // The fake NVML lists this process as the simulated driver counts it: weights + context.
  CHECK(o["nvml_self_bytes"] == o["process_device_bytes"].get<uint64_t>() + context);
  // The first context's reading took in the other process's 6 GiB; the list the recorder's
  // sampler took right after the context (before or after the OOM: either way) took them off.
  CHECK(o["code_bytes"] == context);
  CHECK(o["code_after_only_bytes"] == 0);
  CHECK(o["own_code_basis"] == "nvml");
  CHECK(o["own_code_bytes"] == context);
  CHECK(o["elsewhere_bytes"] == foreign);
  CHECK(o["elsewhere_unsure_bytes"] == 0);
  CHECK(o["verdict"] == "other_processes");
  CHECK(o["causes"][0]["evidence"]["other_bytes"] == foreign);
  // The breakdown counts the context as NVML bounds it, so nothing is counted twice.
  CHECK(o["fidelity"]["contexts_bytes"] == context);
  CHECK(o["fidelity"]["other_processes_bytes"] == foreign);
  CHECK(o["fidelity"]["unexplained_bytes"] == 0);
  // The peak (the weights, read at the failure's reading: nothing changed since) likewise.
  json peak = report(trace)["peak"];
  CHECK(peak["fidelity"]["contexts_bytes"] == context);
  CHECK(peak["fidelity"]["unexplained_bytes"] == 0);
  std::string line = device_line(text_report(trace));
  CHECK(line.find("512 MiB contexts and code") != std::string::npos);
  CHECK(line.find("elsewhere: 6.00 GiB") != std::string::npos);
  CHECK(line.find("first context") == std::string::npos);

  // NVML without this process's row (a container's PID namespace): the other processes it lists
  // right after the first context still come off that context's cost (rule 14), so the context
  // is this process's, within the bound on a context's cost, and nothing is unsure.
  trace = scenario("others", {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                              {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                              {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                              {"FAKENVML_SELF", "0"},
                              {"FAKENVML_PROCESSES", "999999:" + std::to_string(foreign)}});
  o = oom_of(report(trace, "oom"));
  CHECK(o["nvml_self_bytes"].is_null());
  CHECK(o["nvml_blind"] == true);
  CHECK(o["code_bytes"] == context);
  CHECK(o["own_code_basis"] == "bounded");
  CHECK(o["own_code_bytes"] == context);
  CHECK(o["elsewhere_bytes"] == foreign);
  CHECK(o["elsewhere_unsure_bytes"] == 0);
  CHECK(o["verdict"] == "other_processes");
  CHECK(o["causes"][0]["evidence"]["other_bytes"] == foreign);
  CHECK(o["fidelity"]["contexts_bytes"] == context);
  CHECK(o["fidelity"]["unexplained_bytes"] == 0);

  // Without NVML: the first context's cost stays elsewhere, said to be possibly the context.
  trace = scenario("others", {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                              {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                              {"VRAMTRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  o = oom_of(report(trace, "oom"));
  CHECK(o["code_after_only_bytes"] == foreign + context);
  CHECK(o["elsewhere_unsure_bytes"] == foreign + context);
  CHECK(o["own_code_basis"] == "");
}

// A container whose NVML cannot see this process (no row with its pid): it lists nothing, or the
// host's pids (this process's own among them). Another process's 6 GiB was "6.50 GiB contexts and
// code, elsewhere: 0 B" and the verdict live_set_too_large, "a smaller batch".
TEST_CASE("NVML that cannot see this process: another process's memory is elsewhere, not contexts, and no smaller batch") {
  const uint64_t context = 512ull << 20, foreign = 6ull << 30;
  const std::vector<std::pair<std::string, std::string>> gpu = {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                                                                {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                                                                {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> more) {
    more.insert(more.end(), gpu.begin(), gpu.end());
    return more;
  };
  auto no_smaller_batch = [](const json& o) {
    CHECK(o["verdict"] == "other_processes");
    CHECK(o["remedies"][0].get<std::string>().find("cannot see this process") != std::string::npos);
    for (const json& m : o["remedies"]) CHECK(m.get<std::string>().find("Reduce the live set") == std::string::npos);
  };
  SECTION("NVML lists no process: the first context's cost, all of the 6.5 GiB, counts at most 1 GiB") {
    std::string trace = scenario("others", with({{"FAKENVML_SELF", "0"}}));
    json o = oom_of(report(trace, "oom"));
    CHECK(o["nvml"] == true);
    CHECK(o["nvml_blind"] == true);
    CHECK(o["code_bytes"] == foreign + context);  // the empty list took nothing off it (rule 14)
    CHECK(o["own_code_basis"] == "bounded");
    CHECK(o["own_code_bytes"] == 1ull << 30);
    CHECK(o["elsewhere_bytes"] == foreign + context - (1ull << 30));
    CHECK(o["elsewhere_unsure_bytes"] == 0);
    CHECK(o["causes"][0]["evidence"]["other_bytes"] == foreign + context - (1ull << 30));
    CHECK(o["causes"][0]["summary"].get<std::string>().find("NVML cannot see this process") != std::string::npos);
    no_smaller_batch(o);
    CHECK(o["fidelity"]["contexts_bytes"] == 1ull << 30);  // as bounded, in the breakdown too
    std::string text = text_report(trace);
    std::string line = device_line(text);
    CHECK(line.find("1.00 GiB contexts and code (a context counted at most 1.00 GiB") != std::string::npos);
    CHECK(line.find("elsewhere: 5.50 GiB") != std::string::npos);
    CHECK(text.find("NVML cannot see this process (no row has its pid") != std::string::npos);
  }
  SECTION("NVML lists the host's pids, this process's among them: its row is no other process's") {
    std::string trace =
        scenario("others", with({{"FAKENVML_SELF_PID", "4000001"}, {"FAKENVML_PROCESSES", "999999:" + std::to_string(foreign)}}));
    json o = oom_of(report(trace, "oom"));
    CHECK(o["nvml_blind"] == true);
    // The first list took both rows off the context (this process's own among them): nothing is
    // left of it, and the driver's used memory beyond the weights is elsewhere, the context included.
    CHECK(o["own_code_bytes"] == 0);
    CHECK(o["elsewhere_bytes"] == foreign + context);
    // Not NVML's sum (which holds this process's own row as another's): the driver's figure.
    CHECK(o["causes"][0]["evidence"]["other_bytes"] == foreign + context);
    no_smaller_batch(o);
  }
  SECTION("on a GPU of its own, a blind NVML changes nothing: the context is this process's") {
    std::string trace = scenario("others", {{"FAKECUDA_TOTAL_BYTES", "2GiB"},
                                            {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                                            {"FAKENVML_SELF", "0"}});
    json o = oom_of(report(trace, "oom"));
    CHECK(o["nvml_blind"] == true);
    CHECK(o["own_code_bytes"] == context);
    CHECK(o["elsewhere_bytes"] == 0);
    CHECK(o["verdict"] != "other_processes");
  }
}

TEST_CASE("no OOM on a GPU another process uses: the peak's breakdown counts it as other processes, not as the context") {
  const uint64_t context = 512ull << 20, foreign = 6ull << 30;
  std::string trace = e2e::run_figures({e2e::program("oom_scenarios"), "steps", "3"},
                                       {{"FAKECUDA_TOTAL_BYTES", "8GiB"},
                                        {"FAKECUDA_FOREIGN_BYTES", "6GiB"},
                                        {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                                        {"FAKENVML_PROCESSES", "999999:" + std::to_string(foreign)}})
                          .trace;
  json j = report(trace);
  REQUIRE(j["ooms"].empty());
  const json& f = j["peak"]["fidelity"];
  INFO(f.dump(1));
  CHECK(f["contexts_bytes"] == context);  // was the context plus the other process's 6 GiB
  CHECK(f["other_processes_bytes"] == foreign);
  CHECK(f["unexplained_bytes"] == 0);
}

TEST_CASE("a demo-like OOM: the context is this process's, shown apart, and nothing is elsewhere") {
  const uint64_t context = 512ull << 20;  // the simulated context's default cost
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("demo_workload")},
                            {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML}}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  json o = oom_of(report(files[0], "oom"));
  CHECK(o["own_code_basis"] == "nvml");
  CHECK(o["own_code_bytes"] == context);
  CHECK(o["elsewhere_bytes"] == 0);
  CHECK(o["fidelity"]["contexts_bytes"] == context);
  CHECK(o["verdict"] == "request_exceeds_device");
  std::string line = device_line(text_report(files[0]));
  CHECK(line.find("512 MiB contexts and code") != std::string::npos);
  CHECK(line.find("elsewhere: 0 B") != std::string::npos);

  // Without NVML the context was measured only after it was made: it may be others' memory, so
  // it stays elsewhere, named as possibly this process's first context; the verdict is the same.
  dir = e2e::temp_dir();
  r = e2e::run({{e2e::program("demo_workload")}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  o = oom_of(report(files[0], "oom"));
  CHECK(o["own_code_bytes"] == 0);
  CHECK(o["elsewhere_bytes"] == context);
  CHECK(o["elsewhere_unsure_bytes"] == context);
  CHECK(o["verdict"] == "request_exceeds_device");
  line = device_line(text_report(files[0]));
  CHECK(line.find("elsewhere: 512 MiB (up to 512 MiB of it may be this process's first context") != std::string::npos);
}

// 32 threads allocate at one line; one of them (worker-7) keeps every other allocation. Growth
// and leaks are that thread's; the others' temporaries, overlapping more as threads start one
// after another, are no growth (they made the line's total reach new highs before the
// per-thread rule: docs/metrics.md, "growth").
TEST_CASE("a leak in one of 32 threads is attributed to it, and concurrency is no growth") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("thread_leak"), "32", "200"}, {{"VRAMTRACE_OUTPUT", dir}}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("leaker ");
  REQUIRE(at != std::string::npos);
  const uint64_t leaker = std::stoull(r.out.substr(at + 7));
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  json j = report(files[0]);
  const json& growth = j["leaks"]["growth"];
  REQUIRE(growth.size() == 1);  // the leak's line; not the scratch line, whose total rose as threads joined
  CHECK(stack_has(growth[0]["stack"], "worker"));
  REQUIRE(growth[0]["threads"].size() == 1);
  CHECK(growth[0]["threads"][0]["tid"] == leaker);
  CHECK(growth[0]["threads"][0]["name"] == "worker-7");
  // Its own growth: what it kept (100 MiB), and the one it held at its highest checkpoint, if any;
  // the line's growth counts the others' overlapping temporaries too.
  const uint64_t own = growth[0]["threads"][0]["bytes"];
  CHECK(own >= 100ull << 20);
  CHECK(own <= 101ull << 20);
  CHECK(growth[0]["growth_bytes"].get<uint64_t>() >= own);
  CHECK(growth[0]["threads_at_site"] == 32);
  const json& leaks = j["leaks"]["groups"];
  REQUIRE(leaks.size() == 1);
  CHECK(leaks[0]["bytes"] == 100ull << 20);  // 200 iterations, every other one kept, 1 MiB each
  REQUIRE(leaks[0]["threads"].size() == 1);
  CHECK(leaks[0]["threads"][0]["tid"] == leaker);
  CHECK(leaks[0]["threads"][0]["bytes"] == 100ull << 20);
  e2e::Result text = e2e::run_cli({"report", files[0]});
  CHECK(text.out.find("grew on thread " + std::to_string(leaker) + " (worker-7) (1 of the 32 threads that allocated there)") !=
        std::string::npos);
  CHECK(text.out.find("allocated on thread " + std::to_string(leaker) + " (worker-7)") != std::string::npos);
}
