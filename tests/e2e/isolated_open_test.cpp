// Libraries opened out of the hooks' reach (interpose/entry/dlopen_stub.S): a dlopen with RTLD_DEEPBIND
// or a dlmopen into another namespace is recorded by path, and the report says in its header that
// their CUDA memory calls are missing. tests/programs/isolated_open.cpp opens a plugin that
// allocates through a linked cuMemAlloc and through dlsym; with RTLD_DEEPBIND those allocations
// really do bypass the hooks (so the warning is needed), with a plain dlopen they are recorded
// (so the stub forwards faithfully: the plugin is found only through the caller's RUNPATH).
// Under the LD_AUDIT module (interpose/entry/audit_module.cpp) the RTLD_DEEPBIND plugin gets the hooks
// after all; a library in another namespace still does not.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "figures.h"

using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1 << 20;

std::vector<uint64_t> allocation_sizes(const e2e::Trace& t) {
  std::vector<uint64_t> out;
  for (const auto& e : t.events)
    if (e.op && std::string(e.op->name) == "cuMemAlloc_v2" && e.result == 0) out.push_back(e.size);
  return out;
}

// Runs without an LD_AUDIT the developer's shell may have set; `audit`: with vramtrace's module.
e2e::FigureRun run_mode(const std::string& mode, bool audit = false) {
  return e2e::run_figures({e2e::program("isolated_open"), mode}, {{"LD_AUDIT", audit ? VT_AUDIT_LIBRARY : ""}});
}

json isolated(const json& report) {
  if (!report.contains("interception")) return json::array();
  return report["interception"]["isolated_libraries"];
}

}  // namespace

TEST_CASE("a library opened with RTLD_DEEPBIND is named in the report, whose header says its memory calls are missing") {
  e2e::FigureRun run = run_mode("deepbind");
  REQUIRE(run.figures.at("plugin_linked") == 0);
  REQUIRE(run.figures.at("plugin_dlsym") == 0);
  e2e::Trace t = e2e::load(run.trace);
  // The bypass is real: only the program's own 1 MiB reached the hooks, not the plugin's 2 + 4 MiB.
  CHECK(allocation_sizes(t) == std::vector<uint64_t>{MiB});
  json r = e2e::cli_json(run.trace);
  json libs = isolated(r);
  REQUIRE(libs.size() == 2);
  CHECK(libs[0]["path"] == "libvt_isolated_plugin.so");  // the path as the program gave it (before the trace opened)
  CHECK(libs[0]["how"] == "RTLD_DEEPBIND");
  CHECK(libs[0]["caught"] == false);
  CHECK(libs[0]["mode"] == (RTLD_NOW | RTLD_DEEPBIND));
  std::string again = libs[1]["path"];  // by its absolute path, once the trace was open
  CHECK(again.size() > 25);
  CHECK(again.compare(again.size() - 25, 25, "/libvt_isolated_plugin.so") == 0);
  CHECK(libs[1]["mode"] == (RTLD_LAZY | RTLD_DEEPBIND));
  std::string text = e2e::cli_text(run.trace);
  CHECK(text.find("warning: 2 libraries were opened where vramtrace's hooks cannot reach") != std::string::npos);
  CHECK(text.find("libvt_isolated_plugin.so (RTLD_DEEPBIND)") != std::string::npos);
  CHECK(text.find("to trace them, open them without RTLD_DEEPBIND") != std::string::npos);
  // `info` shows it too (the interception object).
  e2e::Spec s{{e2e::cli(), "info", run.trace}, {}};
  s.preload = false;
  e2e::Result ir = e2e::run(s);
  REQUIRE(ir.exit_code == 0);
  CHECK(json::parse(ir.out)["interception"]["isolated_libraries"].size() == 2);
}

TEST_CASE("a plain dlopen and a dlmopen into the base namespace are forwarded as the caller's own and not flagged") {
  e2e::FigureRun run = run_mode("plain");
  e2e::Trace t = e2e::load(run.trace);
  // The plugin was found through the program's RUNPATH, and its allocations reached the hooks.
  CHECK(allocation_sizes(t) == std::vector<uint64_t>{MiB, 2 * MiB, 4 * MiB});
  json r = e2e::cli_json(run.trace);
  CHECK(isolated(r).empty());
  CHECK_FALSE(r.contains("interception"));  // nothing escaped: no key at all
  CHECK(e2e::cli_text(run.trace).find("hooks cannot reach") == std::string::npos);
}

TEST_CASE("a dlmopen into a new namespace is named, a dlmopen into the base namespace is not") {
  e2e::FigureRun run = run_mode("namespace");
  json libs = isolated(e2e::cli_json(run.trace));
  REQUIRE(libs.size() == 1);
  CHECK(libs[0]["path"] == "libvt_isolated_plugin.so");
  CHECK(libs[0]["how"] == "dlmopen namespace");
  std::string text = e2e::cli_text(run.trace);
  CHECK(text.find("(dlmopen namespace)") != std::string::npos);
  CHECK(text.find("without RTLD_DEEPBIND") == std::string::npos);  // no such advice for a namespace
}

TEST_CASE("past 16 distinct paths, the recorder writes one entry for the rest, and the text shows the first four") {
  e2e::FigureRun run = run_mode("many");
  json libs = isolated(e2e::cli_json(run.trace));
  REQUIRE(libs.size() == 17);
  for (size_t i = 0; i < 16; ++i) {
    INFO(i);
    std::string p = libs[i]["path"];
    CHECK(p.size() > 24);
    CHECK(p.compare(p.size() - 24, 24, "libvt_isolated_plugin.so") == 0);
  }
  CHECK(libs[16]["path"] == "(more libraries)");
  std::string text = e2e::cli_text(run.trace);
  CHECK(text.find("warning: 17 libraries were opened") != std::string::npos);
  CHECK(text.find("and 13 more (--format json lists them)") != std::string::npos);
}

TEST_CASE("with LD_AUDIT=libvramtrace_audit.so an RTLD_DEEPBIND library gets the hooks, and the report says its calls are in") {
  e2e::FigureRun run = run_mode("deepbind", true);
  e2e::Trace t = e2e::load(run.trace);
  // The plugin's linked cuMemAlloc (a bind-now PLT binding) and its dlsym'ed one both reached the hooks.
  CHECK(allocation_sizes(t) == std::vector<uint64_t>{MiB, 2 * MiB, 4 * MiB});
  json libs = isolated(e2e::cli_json(run.trace));
  REQUIRE(libs.size() == 2);
  CHECK(libs[0]["caught"] == true);
  CHECK(libs[1]["caught"] == true);
  std::string text = e2e::cli_text(run.trace);
  CHECK(text.find("2 libraries opened with RTLD_DEEPBIND got vramtrace's hooks through its LD_AUDIT module") != std::string::npos);
  CHECK(text.find("warning:") == std::string::npos);
  // The normal paths are unchanged under the module: nothing is recorded twice.
  e2e::FigureRun plain = run_mode("plain", true);
  CHECK(allocation_sizes(e2e::load(plain.trace)) == std::vector<uint64_t>{MiB, 2 * MiB, 4 * MiB});
}

TEST_CASE("the LD_AUDIT module cannot reach a library in another namespace, which the report still names") {
  e2e::FigureRun run = run_mode("namespace", true);
  json libs = isolated(e2e::cli_json(run.trace));
  REQUIRE(libs.size() == 1);
  CHECK(libs[0]["caught"] == false);
  CHECK(e2e::cli_text(run.trace).find("warning: 1 library was opened where vramtrace's hooks cannot reach") != std::string::npos);
}

TEST_CASE("the LD_AUDIT module alone (no libvramtrace.so) changes nothing: the program runs as without it") {
  e2e::Spec s{{e2e::program("isolated_open"), "deepbind"}, {{"LD_AUDIT", VT_AUDIT_LIBRARY}}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("plugin_linked 0") != std::string::npos);
  CHECK(r.err.empty());
}

TEST_CASE("vramtrace run --audit loads the module beside the library, and refuses in one line when it is missing") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s{{e2e::cli(), "run", "--audit", "-o", dir, "--", e2e::program("isolated_open"), "deepbind"},
              {{"LD_AUDIT", ""}}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  CHECK(allocation_sizes(e2e::load(files[0])) == std::vector<uint64_t>{MiB, 2 * MiB, 4 * MiB});
  CHECK(isolated(e2e::cli_json(files[0]))[0]["caught"] == true);

  // A library without the module beside it (a copy elsewhere, named by VRAMTRACE_LIBRARY).
  std::string lonely = e2e::temp_dir();
  REQUIRE(system(("cp " + std::string(VT_LIBRARY) + " " + lonely + "/libvramtrace.so").c_str()) == 0);
  std::string out2 = e2e::temp_dir();
  e2e::Spec m{{e2e::cli(), "run", "--audit", "-o", out2, "--", e2e::program("isolated_open"), "plain"},
              {{"VRAMTRACE_LIBRARY", lonely + "/libvramtrace.so"}}};
  m.preload = false;
  r = e2e::run(m);
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  CHECK(r.err.find("--audit: cannot find " + lonely + "/libvramtrace_audit.so") != std::string::npos);
  CHECK(r.out.find("plugin_linked") == std::string::npos);  // nothing was run
  CHECK(e2e::files_in(out2).empty());
}

TEST_CASE("a program built with TSan or ASan starts and is traced: its runtime's early dlsym and dlvsym calls reach glibc") {
  int found = 0;
  for (const char* name : {"sanitized_thread", "sanitized_address"}) {
    std::string path = e2e::program(name);
    if (access(path.c_str(), X_OK) != 0) continue;  // the compiler has no such sanitizer
    ++found;
    INFO(name);
    std::string dir = e2e::temp_dir();
    // ASan wants its runtime first in the library list; a preload needs this setting (any preload).
    e2e::Result r = e2e::run({{path}, {{"VRAMTRACE_OUTPUT", dir}, {"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0"},
                                       {"TSAN_OPTIONS", "report_bugs=0"}}});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "ok\n");
    auto files = e2e::files_in(dir);
    REQUIRE(files.size() == 1);
    CHECK(allocation_sizes(e2e::load(files[0])) == std::vector<uint64_t>{MiB});
  }
  // tests/CMakeLists.txt builds them where the compiler can (gcc and clang on x86-64 and aarch64).
  REQUIRE(found > 0);
}

// A program whose every CUDA call is made from a library dlmopen'ed into another namespace: no
// trace can be written, and `vramtrace run` said "the program made no CUDA memory call" (it made
// four). It names the library and why its calls were not recorded.
TEST_CASE("vramtrace run names the library out of reach when no trace could be written") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s{{e2e::cli(), "run", "-o", dir, "--", e2e::program("isolated_open"), "namespace-only"}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("plugin_init_and_alloc 0") != std::string::npos);
  CHECK(e2e::files_in(dir).empty());
  CHECK(r.err.find("no trace written: no CUDA memory call reached vramtrace; libraries out of the hooks' reach were "
                   "opened, and any made from them are not recorded: libvt_isolated_plugin.so (opened with dlmopen into another "
                   "namespace)") != std::string::npos);
  CHECK(r.err.find("the program made no CUDA memory call") == std::string::npos);
}
