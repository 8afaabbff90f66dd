// Contexts, code and pools by location end to end: tests/programs/context_costs.cpp creates two
// contexts, loads a module and (lazily) a library, raises a limit at its peak, allocates from the
// host pool, then unloads, destroys and fails an allocation, on the simulated driver. The report's
// "fidelity" breakdown (format/accounting.h, rule 14) must give the costs the program measured
// itself with cuMemGetInfo, and explain the driver's used memory with nothing left over (the
// simulator holds nothing else), at the peak and at the OOM.
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "figures.h"

using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1 << 20;

using Run = e2e::FigureRun;

Run run_program() { return e2e::run_figures({e2e::program("context_costs")}); }
json report(const std::string& path) { return e2e::cli_json(path); }

}  // namespace

TEST_CASE("contexts and code: their costs explain the driver's used memory at the peak and at the OOM") {
  Run run = run_program();
  const auto& f = run.figures;
  REQUIRE(f.count("used_at_oom"));
  // The simulator's own model (FAKECUDA_CONTEXT_BYTES, FAKECUDA_MODULE_BYTES): what was measured.
  CHECK(f.at("first_context") == 512 * MiB);
  CHECK(f.at("second_context") == 512 * MiB);
  CHECK(f.at("module") == 2 * MiB);
  CHECK(f.at("lazy") == 2 * MiB);
  CHECK(f.at("limit") > 0);

  json j = report(run.trace);
  INFO(j.dump(1));
  const json& peak = j["peak"]["by_device"][0];
  REQUIRE(peak["fidelity"].is_object());
  const json& p = peak["fidelity"];
  CHECK(peak["bytes"] == f.at("tracked_at_peak"));  // contexts and code are no allocations
  CHECK(p["at_instant"] == true);  // cuCtxSetLimit read the driver at the peak's state
  CHECK(p["used_bytes"] == f.at("used_at_peak"));
  CHECK(p["tracked_bytes"] == f.at("tracked_at_peak"));
  CHECK(p["contexts_bytes"] == f.at("first_context") + f.at("second_context") + f.at("limit"));
  CHECK(p["modules_bytes"] == f.at("module") + f.at("lazy"));
  CHECK(p["cupti_buffers_bytes"] == 0);  // vramtrace's CUPTI recorder did not run
  CHECK(p["other_processes_bytes"].is_null());
  CHECK(p["unexplained_bytes"] == 0);
  // The host pool's allocation is pinned host memory, not the device's.
  CHECK(j["peak"]["pinned_host_bytes"] == 8 * MiB);

  REQUIRE(j["ooms"].size() == 1);
  const json& o = j["ooms"][0]["fidelity"];
  REQUIRE(o.is_object());
  CHECK(o["used_bytes"] == f.at("used_at_oom"));
  CHECK(o["contexts_bytes"] == f.at("first_context"));  // the second context, its limit and code went back
  CHECK(o["modules_bytes"] == 0);
  CHECK(o["tracked_bytes"] == 32 * MiB);
  CHECK(o["unexplained_bytes"] == 0);
  // The pools' own figures were read at the failure.
  CHECK(j["ooms"][0]["pool_figures"] == "driver");
  CHECK(o["pool_cached_source"] == "driver");
  // Contexts and code are not leaks.
  CHECK(j["leaks"]["bytes"] == 0);
}

TEST_CASE("contexts and code: the trace records each creation, load and limit with the free memory around it") {
  Run run = run_program();
  e2e::Trace t = e2e::load(run.trace);
  std::map<std::string, int> ops;
  for (const vt::analyzer::Record& r : t.code_events) ops[r.op->name]++;
  for (const std::string& op : t.ops()) ops[op]++;
  CHECK(ops["cuCtxCreate_v4"] == 2);
  CHECK(ops["cuModuleLoadData"] == 1);
  CHECK(ops["cuLibraryLoadData"] == 1);
  CHECK(ops["cuKernelGetFunction"] == 1);  // the second call loaded nothing: not recorded
  CHECK(ops["cuCtxSetLimit"] == 1);
  CHECK(ops["cuMemGetMemPool"] == 1);
  CHECK(ops["cuMemSetMemPool"] == 1);
  CHECK(ops["cuMemPoolSetAttribute"] == 1);
  CHECK(ops["cuModuleUnload"] == 1);
  CHECK(ops["cuLibraryUnload"] == 1);
  for (const vt::analyzer::Record& r : t.code_events) {
    if (r.op->id != vt::HookId::cuCtxCreate_v4) continue;
    CHECK(r.has(vt::format::kEvAux));  // free after: always readable (the new context is current)
  }
}

TEST_CASE("VDPAU contexts cost what a context costs, both ABI variants, given back when destroyed") {
  Run run = e2e::run_figures({e2e::program("context_costs"), "vdpau"});
  const auto& f = run.figures;
  REQUIRE(f.count("used_at_oom"));
  // The simulator's model: a VDPAU context is a created context (FAKECUDA_CONTEXT_BYTES).
  CHECK(f.at("vdpau_v2") == 512 * MiB);
  CHECK(f.at("vdpau_v1") == 512 * MiB);

  e2e::Trace t = e2e::load(run.trace);
  std::map<std::string, int> ops;
  for (const vt::analyzer::Record& r : t.code_events) {
    ops[r.op->name]++;
    if (r.op->id == vt::HookId::cuVDPAUCtxCreate || r.op->id == vt::HookId::cuVDPAUCtxCreate_v2) {
      CHECK(r.has(vt::format::kEvSize));  // free before: another context was current
      CHECK(r.has(vt::format::kEvAux));   // free after
      CHECK(r.result == 0);
    }
  }
  CHECK(ops["cuVDPAUCtxCreate_v2"] == 1);
  CHECK(ops["cuVDPAUCtxCreate"] == 1);

  json j = report(run.trace);
  INFO(j.dump(1));
  const json& p = j["peak"]["by_device"][0]["fidelity"];
  REQUIRE(p.is_object());
  CHECK(j["peak"]["bytes"] == f.at("tracked_at_peak"));  // contexts are no allocations
  CHECK(p["used_bytes"] == f.at("used_at_peak"));
  CHECK(p["contexts_bytes"] == f.at("first_context") + f.at("vdpau_v2") + f.at("vdpau_v1"));
  CHECK(p["unexplained_bytes"] == 0);
  REQUIRE(j["ooms"].size() == 1);
  const json& o = j["ooms"][0]["fidelity"];
  CHECK(o["used_bytes"] == f.at("used_at_oom"));
  CHECK(o["contexts_bytes"] == f.at("first_context"));  // cuCtxDestroy gave both VDPAU contexts back
  CHECK(o["unexplained_bytes"] == 0);
  // What was allocated in the VDPAU context went with it (rule 6): no leak, a teardown.
  CHECK(j["leaks"]["bytes"] == 0);
  CHECK(j["leaks"]["teardown"]["bytes"] == f.at("teardown_bytes"));
}

TEST_CASE("contexts and code: 300 module loads before the first allocation are recorded, those past the held 256 said") {
  // The recorder holds context and code ops until the first allocation opens the trace; it held
  // 16 and dropped the rest without a word (their memory became "unexplained").
  for (int n : {200, 300}) {
    INFO(n << " modules");
    Run run = e2e::run_figures({e2e::program("context_costs"), "modules", std::to_string(n)});
    REQUIRE(run.figures.at("modules") == uint64_t(n) * 2 * MiB);  // FAKECUDA_MODULE_BYTES
    e2e::Trace t = e2e::load(run.trace);
    int loads = 0;
    for (const vt::analyzer::Record& r : t.code_events) loads += r.op->id == vt::HookId::cuModuleLoadData;
    CHECK(loads == std::min(n, 255));  // 256 held: the context and 255 loads
    e2e::Spec spec{{e2e::cli(), "info", run.trace}, {}};
    spec.preload = false;
    json info = json::parse(e2e::run(spec).out);
    bool said = false;
    for (const auto& note : info["notes"]) said |= note.get<std::string>().find("were not recorded (more than 256)") != std::string::npos;
    CHECK(said == (n > 255));
    if (n <= 255) {  // all recorded: the code costs explain the used memory
      json j = report(run.trace);
      CHECK(j["peak"]["by_device"][0]["fidelity"]["modules_bytes"].get<uint64_t>() == uint64_t(n) * 2 * MiB);
    }
  }
}
