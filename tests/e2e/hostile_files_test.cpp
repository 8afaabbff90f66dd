// FIFOs and devices where vramtrace expects files: as the trace given to every command, inside a
// job directory, in the output directory of `vramtrace run`, as module paths a trace names and as
// a module's separate debug file. Nothing may hang (every run here has a 20 s limit; a blocking
// open of a FIFO never returns); a trace that is not a regular file gets one line naming it; a
// module that is not a regular file is simply not symbolized.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "../crafted_trace.h"
#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  s.timeout_s = 20;
  return e2e::run(s);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string fifo(const std::string& path) {
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// A shell command's stdout (for nm and objcopy).
std::string shell(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

}  // namespace

TEST_CASE("a FIFO or a device given as a trace is refused at once with one line, by every command") {
  std::string dir = e2e::temp_dir();
  std::string pipe = fifo(dir + "/pipe.trace");
  std::string out = dir + "/out.json";
  const std::vector<std::vector<std::string>> commands = {
      {"dump", pipe},  {"info", pipe},  {"report", pipe}, {"leaks", pipe}, {"oom", pipe},
      {"check", pipe, "--max-peak", "1GiB"}, {"export", pipe, "--perfetto", out}, {"export", pipe, "--folded", "-"},
      {"diff", pipe, pipe}};
  for (const auto& c : commands) {
    e2e::Result r = cli(c);
    INFO(c[0] << ": " << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code != 0);
    CHECK(e2e::lines(r.err).size() == 1);
    CHECK(has(r.err, pipe + ": not a regular file (a FIFO)"));
  }
  e2e::Result r = cli({"info", "/dev/null"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: /dev/null: not a regular file (a character device)\n");
}

TEST_CASE("a FIFO in a job directory: named like a trace it is reported, otherwise passed over") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "steps", "3"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  fifo(dir + "/vramtrace.1.trace");
  fifo(dir + "/notes");
  r = cli({"report", dir});
  INFO(r.out << r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, dir + "/vramtrace.1.trace: unreadable: not a regular file (a FIFO)"));
  CHECK_FALSE(has(r.err, "notes"));
  CHECK(has(r.out, "vramtrace job report: 1 trace, 1 unreadable"));
  r = cli({"check", dir, "--max-peak", "1TiB"});
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
}

TEST_CASE("vramtrace run finds its traces in an output directory that holds a FIFO") {
  std::string dir = e2e::temp_dir();
  fifo(dir + "/pipe");
  e2e::Result r = cli({"run", "-o", dir, "--", e2e::program("lookup_direct")});
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "1 trace file"));
}

TEST_CASE("module paths naming a FIFO or a device, and a debug file that is a FIFO, never hang symbolization") {
  std::string dir = e2e::temp_dir();
  // A real library whose separate debug file (its .gnu_debuglink) is then replaced by a FIFO.
  std::string lib = dir + "/libplugin.so", dbg = dir + "/libplugin.so.dbg";
  std::string plugin = e2e::program("libstack_plugin.so");
  shell("objcopy --only-keep-debug " + plugin + " " + dbg + " && objcopy --strip-debug --add-gnu-debuglink=" + dbg +
        " " + plugin + " " + lib);
  REQUIRE(access(lib.c_str(), R_OK) == 0);
  REQUIRE(has(shell("readelf --string-dump=.gnu_debuglink " + lib), "libplugin.so.dbg"));
  unlink(dbg.c_str());
  fifo(dbg);
  std::string sym = shell("nm --defined-only " + lib + " | grep ' T plugin_alloc'");
  REQUIRE_FALSE(sym.empty());
  uint64_t plugin_alloc = std::stoull(sym.substr(0, sym.find(' ')), nullptr, 16);
  std::string pipe = fifo(dir + "/libfifo.so");

  const uint64_t kA = 0x7f0000000000, kB = 0x7f1000000000, kC = 0x7f2000000000;
  crafted::CraftedTrace t;
  t.process({"prog"}, "/bin/prog");
  t.module(kA, kA, kA + 0x100000, pipe);
  t.module(kB, kB, kB + 0x100000, "/dev/zero");
  t.module(kC, kC, kC + 0x100000, lib);
  t.stack(1, {kA + 0x1234, kB + 0x42, kC + plugin_alloc + 4});
  t.alloc(0x10000000, 1 << 20, 1);
  std::string trace = dir + "/modules.trace";
  t.write(trace);

  e2e::Result r = cli({"dump", trace});
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  auto lines = e2e::lines(r.out);
  REQUIRE(lines.size() == 1);
  auto j = nlohmann::json::parse(lines[0]);
  REQUIRE(j["stack"].size() == 3);
  CHECK(j["stack"][0]["module"] == pipe);
  CHECK(j["stack"][0]["function"] == "??");
  CHECK(j["stack"][0]["offset"] == 0x1234);
  CHECK(j["stack"][1]["module"] == "/dev/zero");
  CHECK(j["stack"][1]["function"] == "??");
  CHECK(j["stack"][2]["module"] == lib);
  CHECK(j["stack"][2]["function"] == "plugin_alloc");  // from its own symbol table

  r = cli({"report", trace});
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "plugin_alloc"));
}

TEST_CASE("a trace truncated by another program while it is read: one line and status 2, no crash") {
  // Traces are read through mappings: pages cut off under the reader fault (SIGBUS, status 135).
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("threads"), "2", "300000"}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_STACK_DEPTH", "0"}}});
  REQUIRE(r.exit_code == 0);
  std::string trace = e2e::files_in(dir).at(0);
  // dump's output fills the pipe and waits; the file is cut while most of it is still unread.
  e2e::Spec s{{}, {}};
  s.argv = {"bash", "-c", "\"$1\" dump --no-stacks \"$2\" | (head -c 100 >/dev/null; truncate -s 70000 \"$2\"; cat >/dev/null);"
                          " exit ${PIPESTATUS[0]}",
            "bash", e2e::cli(), trace};
  s.preload = false;
  s.timeout_s = 60;
  r = e2e::run(s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);  // (135: SIGBUS)
  CHECK(r.err == "vramtrace: a trace shrank while it was read (truncated or replaced by another program); stopped\n");
}

TEST_CASE("a valid header over a sparse terabyte is read at once, not chunk by chunk") {
  // 4 KiB on disk: every command spent minutes faulting in pages of zeros.
  std::string dir = e2e::temp_dir();
  e2e::Result made = e2e::run({{e2e::program("threads"), "1", "10"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(made.exit_code == 0);
  std::vector<std::string> files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  REQUIRE(truncate(files[0].c_str(), off_t(1) << 40) == 0);
  for (const char* command : {"info", "report", "check"}) {
    INFO(command);
    std::vector<std::string> argv = {e2e::cli(), command, files[0]};
    if (std::string(command) == "check") argv.push_back("--no-oom");
    e2e::Spec s{argv, {}, false};
    s.timeout_s = 30;
    e2e::Result r = e2e::run(s);
    CHECK(!r.timed_out);
    CHECK(r.exit_code == 0);
  }
  unlink(files[0].c_str());
}
