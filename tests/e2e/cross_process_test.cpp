// Memory shared between processes end to end (format/accounting.h, rules 10 and 13):
// tests/programs/cross_process.cpp exports 4 MiB (a VMM allocation as a POSIX fd, a cuMemAlloc
// as a legacy IPC handle, a pool's block as an exported pointer of an exported pool), fork+execs
// its importer and hands it the handle over a unix socket (the fd with SCM_RIGHTS), which
// imports, maps and uses it, then lets it go (or, with `keep`, leaves it open at exit). Both
// processes are traced. Each trace alone and the job directory must say the same: the importer
// counts the memory as imported (never in its peak, its allocations or its leaks), the exporter
// as its own allocation, shared once; and the three ways of sharing agree.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "figures.h"

using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1 << 20;

struct Pair {
  std::string dir;
  std::map<std::string, uint64_t> figures;
  std::string exporter, importer;  // their traces
};

// `other_device`: the exporter's memory on device 1 of 2, the importer's context on device 0.
Pair run_pair(const std::string& kind, bool keep, bool other_device = false) {
  Pair p;
  p.dir = e2e::temp_dir();
  std::vector<std::string> argv = {e2e::program("cross_process"), "export", kind};
  if (keep) argv.push_back("keep");
  if (other_device) argv.push_back("dev1");
  e2e::Result r = e2e::run({argv,
                            {{"VRAMTRACE_OUTPUT", p.dir},
                             {"FAKECUDA_CONTEXT_BYTES", "0"},
                             {"FAKECUDA_DEVICES", other_device ? "2" : "1"}}});
  INFO(kind << ": " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const std::string& line : e2e::lines(r.out)) {
    std::istringstream in(line);
    std::string name;
    long long v = 0;
    if (in >> name >> v) p.figures[name] = uint64_t(v);
  }
  REQUIRE(p.figures.count("importer_pid"));
  REQUIRE(p.figures.count("exporter_pid"));
  const auto files = e2e::files_in(p.dir);
  REQUIRE(files.size() == 2);  // one trace per process (the fork before the exec wrote none)
  for (const std::string& f : files) {
    e2e::Trace t = e2e::load(f);
    if (t.info.pid == p.figures.at("exporter_pid")) p.exporter = f;
    if (t.info.pid == p.figures.at("importer_pid")) {
      p.importer = f;
      CHECK(t.info.ppid == p.figures.at("exporter_pid"));
    }
  }
  REQUIRE(!p.exporter.empty());
  REQUIRE(!p.importer.empty());
  return p;
}

// The import and export calls of each way of sharing.
struct Ops {
  const char* exports[2];
  const char* import;
  const char* release;
  int own_releases;  // the importer's calls of `release` for its own memory
};
Ops ops_of(const std::string& kind) {
  if (kind == "vmm") return {{"cuMemExportToShareableHandle", nullptr}, "cuMemImportFromShareableHandle", "cuMemRelease", 0};
  if (kind == "ipc") return {{"cuIpcGetMemHandle", nullptr}, "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle", 0};
  return {{"cuMemPoolExportToShareableHandle", "cuMemPoolExportPointer"}, "cuMemPoolImportPointer", "cuMemFree_v2", 1};
}

// What a report of the exporter must say, whichever way it shared.
void check_exporter(const json& j, const Pair& p) {
  INFO("exporter: " << j.dump(1));
  const uint64_t shared = p.figures.at("exporter_shared_bytes");
  CHECK(p.figures.at("exporter_used_shared") == shared);  // the driver counted it there
  CHECK(j["peak"]["bytes"] == shared);
  CHECK(j["allocations"]["count"] == 1);
  CHECK(j["leaks"]["bytes"] == 0);
  const json& sh = j.at("sharing");
  CHECK(sh["exported"]["count"] == 1);
  CHECK(sh["exported"]["bytes"] == shared);
  REQUIRE(sh["exported"]["groups"].size() == 1);
  CHECK(sh["exported"]["groups"][0]["kind"] == "device");
  CHECK(sh["exported"]["groups"][0]["device"] == p.figures.at("exporter_device"));
  CHECK(j["peak"]["device"] == p.figures.at("exporter_device"));
  CHECK(sh["imported"]["max_bytes"] == 0);
}

// What a report of the importer must say: `open` when the import was left open at exit.
void check_importer(const json& j, const Pair& p, bool open) {
  INFO("importer: " << j.dump(1));
  const uint64_t seen = p.figures.at("importer_seen_bytes");
  REQUIRE(seen == p.figures.at("exporter_shared_bytes"));  // the driver gave it the exporter's size
  // Its own memory only: the 1 MiB cuMemAlloc, never the import.
  CHECK(j["peak"]["bytes"] == p.figures.at("importer_own_bytes"));
  CHECK(!j["peak"]["by_kind"].contains("imported"));
  for (const json& g : j["peak"]["live_set"]) CHECK(g["kind"] == "device");
  CHECK(j["allocations"]["count"] == 1);
  CHECK(j["allocations"]["bytes"] == p.figures.at("importer_own_bytes"));
  CHECK(j["leaks"]["bytes"] == 0);
  CHECK(j["leaks"]["count"] == 0);
  const json& sh = j.at("sharing");
  CHECK(sh["imported"]["max_bytes"] == seen);
  CHECK(sh["imported"]["bytes"] == (open ? seen : 0));
  CHECK(sh["imported"]["count"] == (open ? 1 : 0));
  if (open) {
    REQUIRE(sh["imported"]["groups"].size() == 1);
    CHECK(sh["imported"]["groups"][0]["kind"] == "imported");
    // Where the memory is, whatever this process's context: the exporter's device.
    CHECK(sh["imported"]["groups"][0]["device"] == p.figures.at("exporter_device"));
    CHECK(sh["imported"]["groups"][0]["bytes"] == seen);
  }
  CHECK(sh["exported"]["calls"] == 0);
}

void check_pair(const std::string& kind, bool keep, bool other_device = false) {
  Pair p = run_pair(kind, keep, other_device);
  const Ops ops = ops_of(kind);
  e2e::Trace ex = e2e::load(p.exporter), im = e2e::load(p.importer);
  for (const char* op : ops.exports)
    if (op) CHECK(e2e::count_op(ex, op) == 1);
  CHECK(e2e::count_op(ex, ops.import) == 0);
  CHECK(e2e::count_op(im, ops.import) == 1);
  CHECK(e2e::count_op(im, ops.release) == size_t((keep ? 0 : 1) + ops.own_releases));

  // Each trace alone.
  const json exporter = e2e::cli_json(p.exporter), importer = e2e::cli_json(p.importer);
  check_exporter(exporter, p);
  check_importer(importer, p, keep);

  for (const json* j : {&exporter, &importer}) {  // every release matched its acquire, no damage
    CHECK((*j)["trace"]["unmatched_frees"] == 0);
    CHECK((*j)["trace"]["failed_events"] == 0);
    CHECK((*j)["trace"]["problems"].empty());
  }

  // The job directory: the same two reports, and no leak in either rank.
  const json job = e2e::cli_json(p.dir);
  INFO("job: " << job["job"].dump() << job["ranks"].dump());
  CHECK(job["job"]["traces"] == 2);
  CHECK(job["problems"].empty());
  CHECK(job["job"]["max_peak_bytes"] == p.figures.at("exporter_shared_bytes"));
  CHECK(job["job"]["min_peak_bytes"] == p.figures.at("importer_own_bytes"));
  REQUIRE(job["reports"].size() == 2);
  for (const json& r : job["ranks"]) CHECK(r["leak_bytes"] == 0);
  int matched = 0;
  for (const json& r : job["reports"]) {
    if (r["trace"]["pid"] == p.figures.at("exporter_pid")) {
      check_exporter(r, p);
      CHECK(r["sharing"] == exporter["sharing"]);
      ++matched;
    } else if (r["trace"]["pid"] == p.figures.at("importer_pid")) {
      check_importer(r, p, keep);
      CHECK(r["sharing"] == importer["sharing"]);
      ++matched;
    }
  }
  CHECK(matched == 2);

  if (keep) {
    std::string text = e2e::cli_text(p.importer);
    CHECK(text.find("imported: 4.00 MiB in 1 import still open") != std::string::npos);
  }
}

// The figures of a report that do not depend on how the memory was shared.
json shape(const json& j) {
  json devices = json::array();
  for (const char* part : {"imported", "exported"})
    for (const json& g : j["sharing"][part]["groups"]) devices.push_back({part, g["device"], g["bytes"]});
  return {{"peak", j["peak"]["bytes"]},
          {"peak_device", j["peak"]["device"]},
          {"devices", devices},
          {"leaks", j["leaks"]["bytes"]},
          {"allocations", j["allocations"]["count"]},
          {"imported", j["sharing"]["imported"]["bytes"]},
          {"imported_max", j["sharing"]["imported"]["max_bytes"]},
          {"imports", j["sharing"]["imported"]["count"]},
          {"exported", j["sharing"]["exported"]["bytes"]},
          {"shared", j["sharing"]["exported"]["count"]}};
}

}  // namespace

TEST_CASE("a VMM allocation shared over a unix socket (fd with SCM_RIGHTS): imported in the importer, its own in the exporter") {
  check_pair("vmm", false);
}

TEST_CASE("a cuMemAlloc shared with a legacy IPC handle: imported in the importer, its own in the exporter") {
  check_pair("ipc", false);
}

TEST_CASE("a pool block shared with an exported pool and pointer: imported in the importer, its own in the exporter") {
  check_pair("pool", false);
}

TEST_CASE("an import left open at exit is imported memory still open, never a leak of the importer") {
  for (const char* kind : {"vmm", "ipc", "pool"}) {
    INFO(kind);
    check_pair(kind, true);
  }
}

TEST_CASE("memory exported from another device is imported on that device, whichever way it was shared") {
  for (const char* kind : {"vmm", "ipc", "pool"})
    for (bool keep : {true, false}) {
      INFO(kind << (keep ? " keep" : ""));
      check_pair(kind, keep, true);
    }
}

TEST_CASE("VMM, legacy IPC and pool sharing of the same 4 MiB give the same figures on both sides") {
  std::map<std::string, std::pair<json, json>> by_kind;  // exporter, importer
  const char* variants[] = {"", " keep", " dev1", " keep dev1"};
  for (const char* kind : {"vmm", "ipc", "pool"})
    for (const std::string v : variants) {
      Pair p = run_pair(kind, v.find("keep") != std::string::npos, v.find("dev1") != std::string::npos);
      by_kind[kind + v] = {shape(e2e::cli_json(p.exporter)), shape(e2e::cli_json(p.importer))};
    }
  for (const std::string v : variants) {
    const auto& vmm = by_kind.at("vmm" + v);
    for (const char* other : {"ipc", "pool"}) {
      const auto& o = by_kind.at(other + v);
      INFO(other << v << " vs vmm: " << o.first.dump() << o.second.dump() << " / " << vmm.first.dump()
                 << vmm.second.dump());
      CHECK(o.first == vmm.first);
      CHECK(o.second == vmm.second);
    }
  }
}
