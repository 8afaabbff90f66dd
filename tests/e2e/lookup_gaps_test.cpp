// Every entry point a process can be handed through cuGetProcAddress, checked against
// vramtrace's hooks: the real cudart (static and shared) and proc_sweep (every variant of the
// toolkit's PFN typedefs, as cudaGetDriverEntryPoint callers would ask) run on the simulated
// driver with libvramtrace.so preloaded and VRAMTRACE_DEBUG_LOOKUPS on. Each lookup must
// succeed (the simulated driver answers every name), every symbol handed out must be classified
// in memory_entry_points.txt, and the memory-relevant ones that are not vramtrace's hook must be
// exactly known_unhooked.txt: a new gap fails, and so does a closed gap still listed.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace {

struct Variant {
  const char* base;
  int version;
  int per_thread;
  const char* symbol;
};
const Variant kVariants[] = {
#define FC_ENTRY(base, version, per_thread, symbol, pfn, params) {#base, version, per_thread, #symbol},
#include "entry_points.inc"
#include "entry_points_interop.inc"
#undef FC_ENTRY
};

// The exported symbol cuGetProcAddress hands out for (name, version, flags): the newest variant
// not newer than `version`, the per-thread-stream one when flags ask for it and it exists.
std::string resolve(const std::string& name, int version, int flags) {
  const Variant *plain = nullptr, *ptsz = nullptr;
  for (const Variant& v : kVariants) {
    if (name != v.base || v.version > version) continue;
    const Variant*& best = v.per_thread ? ptsz : plain;
    if (!best || v.version > best->version) best = &v;
  }
  const Variant* hit = (flags & 2) && ptsz ? ptsz : plain;
  return hit ? hit->symbol : "";
}

std::map<std::string, std::string> read_table(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::map<std::string, std::string> t;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string symbol, category;
    in >> symbol >> category;
    t[symbol] = category;
  }
  return t;
}

std::set<std::string> read_list(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  std::set<std::string> s;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string symbol;
    if (in >> symbol && symbol[0] != '#') s.insert(symbol);
  }
  return s;
}

struct Lookup {
  std::string name, module, symbol;
  int version = 0, flags = 0, result = -1;
};

// The program's lookups (from the debug log) and *trace_info, `vramtrace info` of its trace
// (null when it wrote none).
std::vector<Lookup> lookups_of(const std::string& program, nlohmann::json* trace_info) {
  std::string dir = e2e::temp_dir();
  std::string log = dir + "/lookups.log";
  e2e::Result r = e2e::run({{program}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_DEBUG_LOOKUPS", log}}});
  INFO(program << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(log);
  std::vector<Lookup> out;
  std::string line, arrow;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    Lookup l;
    in >> l.name >> l.version >> l.flags >> l.result >> arrow >> l.module >> l.symbol;
    out.push_back(l);
  }
  std::vector<std::string> traces;
  for (const std::string& f : e2e::files_in(dir))
    if (f.size() > 6 && f.compare(f.size() - 6, 6, ".trace") == 0) traces.push_back(f);
  REQUIRE(traces.size() <= 1);  // a trace opens at the first allocation (cudart's probes make none)
  *trace_info = nullptr;
  if (traces.size() == 1) {
    e2e::Result info = e2e::run({{e2e::cli(), "info", traces[0]}, {}});
    REQUIRE(info.exit_code == 0);
    *trace_info = nlohmann::json::parse(info.out);
  }
  return out;
}

}  // namespace

TEST_CASE("every memory-relevant entry point handed out through cuGetProcAddress is hooked or a known gap") {
  const auto table = read_table(std::string(VT_SOURCE_DIR) + "/interpose/entry/memory_entry_points.txt");
  const auto known = read_list(std::string(VT_E2E_SOURCE_DIR) + "/known_unhooked.txt");
  for (const std::string& s : known) {
    INFO("known_unhooked.txt lists " << s);
    CHECK((table.count(s) == 1 && table.at(s) != "none"));  // a gap is a memory-relevant entry point
  }
  std::vector<std::string> programs = {e2e::program("proc_sweep")};
  struct stat st;
  for (const char* probe : {"cudart_probe_static", "cudart_probe_shared"})
    if (stat(e2e::program(probe).c_str(), &st) == 0) programs.push_back(e2e::program(probe));
  CHECK(programs.size() == 3);  // the toolkit's cudart is part of the build

  std::set<std::string> unhooked, unclassified, wrong_hook, failed, handed_out;
  for (const std::string& program : programs) {
    INFO(program);
    nlohmann::json info;
    std::vector<Lookup> lookups = lookups_of(program, &info);
    const bool sweep = program.find("proc_sweep") != std::string::npos;
    size_t answered = 0;
    std::set<std::string> escaped;  // base names handed out unhooked, as the trace must record them
    for (const Lookup& l : lookups) {
      if (l.name == "\"\"") continue;  // cudart's probe of the empty name fails by design
      if (l.result != 0) {
        failed.insert(l.name + " " + std::to_string(l.version) + " " + std::to_string(l.flags));
        continue;
      }
      answered++;
      const std::string symbol = resolve(l.name, l.version, l.flags);
      handed_out.insert(symbol);
      auto c = table.find(symbol);
      if (symbol.empty() || c == table.end()) {
        unclassified.insert(symbol.empty() ? l.name : symbol);
        continue;
      }
      if (l.module == "libvramtrace.so") {
        if (l.symbol != symbol) wrong_hook.insert(symbol + " got " + l.symbol);  // e.g. a legacy hook for _ptsz
      } else if (c->second != "none") {
        unhooked.insert(symbol);
        if (c->second != "lookup") escaped.insert(l.name);
      }
    }
    CHECK(answered >= (sweep ? sizeof kVariants / sizeof kVariants[0] : 430u));
    // The recorder's safety net saw the same: each escaped name once, with its category, and
    // that lookups reached vramtrace. proc_sweep allocates, so it must have a trace.
    if (sweep) REQUIRE(!info.is_null());
    if (info.is_null()) continue;
    const nlohmann::json& x = info.at("interception");
    CHECK(x.at("lookups_reached") == true);
    CHECK(x.at("cudart_unreached") == false);
    std::set<std::string> recorded;
    for (const auto& g : x.at("unhooked")) {
      CHECK(recorded.insert(g.at("symbol").get<std::string>()).second);  // once per name
      auto row = table.find(g.at("symbol").get<std::string>());
      CHECK((row != table.end() && row->second == g.at("category").get<std::string>()));
    }
    CHECK(recorded == escaped);
  }
  for (const auto& f : failed) UNSCOPED_INFO("lookup failed: " << f);
  CHECK(failed.empty());  // the simulated driver answers every name
  for (const auto& u : unclassified) UNSCOPED_INFO("unclassified (add it to memory_entry_points.txt): " << u);
  CHECK(unclassified.empty());
  for (const auto& w : wrong_hook) UNSCOPED_INFO("wrong hook: " << w);
  CHECK(wrong_hook.empty());
  CHECK(handed_out.size() == sizeof kVariants / sizeof kVariants[0]);  // the sweep reached every variant

  std::set<std::string> new_gaps, closed_gaps;
  for (const auto& u : unhooked)
    if (!known.count(u)) new_gaps.insert(u);
  for (const auto& k : known)
    if (!unhooked.count(k)) closed_gaps.insert(k);
  for (const auto& g : new_gaps)
    UNSCOPED_INFO("new gap: " << g << " (" << table.at(g) << ") reaches the program unhooked");
  CHECK(new_gaps.empty());
  for (const auto& g : closed_gaps)
    UNSCOPED_INFO("closed gap: " << g << " is hooked now (or never handed out): remove it from known_unhooked.txt");
  CHECK(closed_gaps.empty());
}
