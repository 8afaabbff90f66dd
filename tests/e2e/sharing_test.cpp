// Shared memory end to end (format/accounting.h, rules 10 to 13): tests/programs/sharing.cpp
// exports, imports, retains, multicasts and maps external memory on the simulated driver; the
// report must count imports as imported (never in the peak or the leaks), free a retained VMM
// handle only at its last release, list the exported allocations and the multicast objects by
// site without counting the objects as memory, and count external mappings as imported and
// this process's mipmapped arrays as device memory, with the figures the program printed.
#include <catch2/catch.hpp>


#include <nlohmann/json.hpp>

#include "figures.h"

using nlohmann::json;

namespace {

using Run = e2e::FigureRun;
using e2e::count_op;

Run run_mode(const std::string& mode) {
  return e2e::run_figures({e2e::program("sharing"), mode}, {{"FAKECUDA_CONTEXT_BYTES", "0"}});
}

json report(const std::string& path) { return e2e::cli_json(path); }
std::string text_report(const std::string& path) { return e2e::cli_text(path); }

constexpr uint64_t MiB = 1 << 20;

}  // namespace

TEST_CASE("VMM and IPC imports count as imported, never as this process's memory, and a retained handle lives until its last release") {
  Run run = run_mode("vmm");
  const auto& f = run.figures;
  REQUIRE(f.at("retained_same_handle") == 1);
  e2e::Trace t = e2e::load(run.trace);
  CHECK(count_op(t, "cuMemImportFromShareableHandle") == 1);
  CHECK(count_op(t, "cuMemRetainAllocationHandle") == 1);
  CHECK(count_op(t, "cuMemHostRegister") == 1);  // the 4.0 export, hooked under its own name

  json j = report(run.trace);
  INFO(j.dump(1));
  // The peak is this process's own memory: the VMM allocation and the cuMemAlloc, no import.
  CHECK(j["peak"]["bytes"] == f.at("peak_own"));
  // The retained handle's memory is still allocated at exit (the driver says so too): a leak.
  REQUIRE(f.at("vmm_left") == 4 * MiB);
  CHECK(j["leaks"]["bytes"] == f.at("vmm_left"));
  CHECK(j["leaks"]["count"] == 1);
  for (const json& g : j["leaks"]["groups"]) CHECK(g["kind"] == "device");
  // Both imports, the VMM one (its size from its mapping) and the legacy IPC one, are imported
  // memory still open at exit, the same way.
  const json& sh = j.at("sharing");
  CHECK(sh["imported"]["bytes"] == f.at("imported_open"));
  CHECK(sh["imported"]["count"] == f.at("imports_open"));
  CHECK(sh["imported"]["max_bytes"] == f.at("imported_max"));  // the pool's pointer came and went on top of them
  REQUIRE(sh["imported"]["groups"].size() == 2);
  for (const json& g : sh["imported"]["groups"]) {
    CHECK(g["kind"] == "imported");
    CHECK(g["count"] == 1);
  }
  CHECK(sh["imported"]["groups"][0]["bytes"] == 4 * MiB);
  CHECK(sh["imported"]["groups"][1]["bytes"] == 2 * MiB);
  // What was shared: each exported allocation once, by the site that allocated it.
  CHECK(sh["exported"]["calls"] == f.at("export_calls"));
  CHECK(sh["exported"]["count"] == f.at("shared_allocations"));
  CHECK(sh["exported"]["bytes"] == f.at("shared_bytes"));
  // The VMM allocation, the cuMemAlloc, the pool block, the host registration: no import.
  CHECK(j["allocations"]["count"] == 4);

  std::string text = text_report(run.trace);
  CHECK(text.find("SHARING") != std::string::npos);
  CHECK(text.find("imported: 6.00 MiB in 2 imports still open") != std::string::npos);
}

TEST_CASE("multicast objects hold no memory: the bound memory is counted once, the objects are listed by site") {
  Run run = run_mode("multicast");
  const auto& f = run.figures;
  REQUIRE(f.at("used_all") == f.at("physical"));  // the driver: the object costs nothing
  e2e::Trace t = e2e::load(run.trace);
  CHECK(count_op(t, "cuMulticastCreate") == 2);
  CHECK(count_op(t, "cuMulticastAddDevice") == 1);
  CHECK(count_op(t, "cuMulticastBindMem") == 1);
  CHECK(count_op(t, "cuMulticastBindAddr") == 1);
  CHECK(count_op(t, "cuMulticastUnbind") == 1);

  json j = report(run.trace);
  INFO(j.dump(1));
  CHECK(j["peak"]["bytes"] == f.at("physical"));
  CHECK(j["peak"]["by_kind"]["vmm_physical"] == f.at("physical"));
  CHECK(j["leaks"]["bytes"] == f.at("physical"));  // both physical allocations, never released
  const json& mc = j.at("sharing").at("multicast");
  CHECK(mc["objects"] == f.at("multicast_objects"));
  CHECK(mc["bytes"] == f.at("multicast_bytes"));
  CHECK(mc["live"] == f.at("multicast_live"));
  CHECK(mc["live_bytes"] == f.at("multicast_live_bytes"));
  CHECK(mc["bound_bytes"] == f.at("multicast_bound"));
  // One creating site per call line: each object attributed to where it was made.
  REQUIRE(mc["groups"].size() == 2);
  for (const json& g : mc["groups"]) {
    CHECK(g["kind"] == "multicast");
    CHECK(g["count"] == 1);
  }
  CHECK(j["sharing"]["imported"]["bytes"] == 0);
}

TEST_CASE("external memory: its mappings are imported, the object holds nothing, mipmapped arrays of this process are device memory") {
  Run run = run_mode("external");
  const auto& f = run.figures;
  e2e::Trace t = e2e::load(run.trace);
  CHECK(count_op(t, "cuImportExternalMemory") == 1);
  CHECK(count_op(t, "cuDestroyExternalMemory") == 1);
  CHECK(count_op(t, "cuMemMapArrayAsync") == 1);  // recorded (it failed: not simulated)

  json j = report(run.trace);
  INFO(j.dump(1));
  CHECK(j["peak"]["bytes"] == f.at("peak_own"));
  CHECK(j["peak"]["by_kind"]["array"] == f.at("peak_own"));
  CHECK(j["leaks"]["bytes"] == f.at("own_mipmap"));
  const json& sh = j.at("sharing");
  CHECK(sh["imported"]["bytes"] == f.at("imported_open"));  // destroying the object freed no mapping
  CHECK(sh["imported"]["count"] == f.at("imports_open"));
}

TEST_CASE("memory released while bound to a multicast object stays until its unbind or the object's release (rule 12)") {
  Run run = run_mode("multicast-released");
  const auto& f = run.figures;
  // The driver keeps the bound memory until the unbind, and the object's release.
  REQUIRE(f.at("used_bound_released") - f.at("used_unbound") == 4 * MiB);
  REQUIRE(f.at("used_bound_by_address") - f.at("used_end") == 2 * MiB);
  json j = report(run.trace);
  INFO(j.dump(1));
  // The peak: the bound 4 MiB with the 1 MiB cuMemAlloc (freed early, it would be 4 MiB).
  CHECK(j["peak"]["bytes"] == 5 * MiB);
  CHECK(j["peak"]["by_kind"]["vmm_physical"] == 4 * MiB);
  CHECK(j["leaks"]["bytes"] == 0);  // the object's release took its last binding's memory
}
