// Bad configuration and unwritable output: one clear line, tracing off, the program unchanged.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "../crafted_trace.h"
#include "harness.h"

namespace {

void expect_one_line_and_untouched(const e2e::Result& r, const std::string& needle) {
  INFO(r.err);
  CHECK(r.exit_code == 0);
  auto l = e2e::lines(r.err);
  REQUIRE(l.size() == 1);
  CHECK(l[0].rfind("vramtrace: ", 0) == 0);
  CHECK(l[0].find(needle) != std::string::npos);
}

}  // namespace

TEST_CASE("bad VRAMTRACE_OUTPUT values") {
  std::string workload = e2e::program("lookup_direct");
  SECTION("a directory that does not exist") {
    e2e::Result r = e2e::run({{workload}, {{"VRAMTRACE_OUTPUT", "/nonexistent-dir/x.trace"}}});
    expect_one_line_and_untouched(r, "cannot create trace file /nonexistent-dir/x.trace: No such file or directory; tracing off");
  }
  SECTION("empty") {
    e2e::Result r = e2e::run({{workload}, {{"VRAMTRACE_OUTPUT", ""}}});
    expect_one_line_and_untouched(r, "VRAMTRACE_OUTPUT is set but empty");
  }
  SECTION("an unknown escape") {
    e2e::Result r = e2e::run({{workload}, {{"VRAMTRACE_OUTPUT", "/tmp/t.%x"}}});
    expect_one_line_and_untouched(r, "unknown %-escape");
  }
}

TEST_CASE("a read-only output directory") {
  std::string dir = e2e::temp_dir();
  chmod(dir.c_str(), 0555);
  e2e::Spec s{{e2e::program("lookup_direct")}, {{"VRAMTRACE_OUTPUT", dir}}};
  s.drop_privileges = true;
  e2e::Result r = e2e::run(s);
  expect_one_line_and_untouched(r, "Permission denied; tracing off");
  CHECK(e2e::files_in(dir).empty());
}

TEST_CASE("a trace that stops fitting on disk stops tracing, not the program") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s{{e2e::program("threads"), "4", "50000"}, {{"VRAMTRACE_OUTPUT", dir}}};
  s.fsize_limit = 2 << 20;  // RLIMIT_FSIZE: the file may not grow past 2 MiB
  e2e::Result r = e2e::run(s);
  expect_one_line_and_untouched(r, "tracing stopped, the program continues");
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  e2e::Trace t = e2e::load(files[0]);
  CHECK(t.events.size() > 10000);
  CHECK(t.data_lost);  // the header says writing stopped early
  // Every event after the stop is counted as lost (they read as never made before).
  INFO(t.events.size() << " events recorded, " << t.info.events_lost << " lost");
  CHECK(t.events.size() + t.info.events_lost >= 400000);
}

TEST_CASE("VRAMTRACE_DISABLE=1 records nothing") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("lookup_direct")}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_DISABLE", "1"}}});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir).empty());
}

TEST_CASE("a fixed output path: the first process owns it, a stale file is replaced") {
  std::string dir = e2e::temp_dir();
  std::string path = dir + "/run.trace";
  for (int i = 0; i < 2; ++i) {
    e2e::Result r = e2e::run({{e2e::program("lifecycle"), "fork"}, {{"VRAMTRACE_OUTPUT", path}}});
    REQUIRE(r.exit_code == 0);
  }
  // Second run replaced run.trace (its writer was gone); the children wrote run.trace.<pid>.
  auto files = e2e::files_in(dir);
  int main_files = 0;
  for (const auto& f : files) main_files += f == path;
  CHECK(main_files == 1);
  e2e::Trace t = e2e::load(path);
  CHECK(t.events.size() == 2);  // the parent's 1 MiB and 3 MiB
}

TEST_CASE("a fixed output path: a trace written on another host or in another pid namespace is never taken") {
  // Its pid means nothing here: a live writer in a container sharing the directory lost its file
  // to a process that found no such pid in its own namespace.
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  struct stat ns;
  REQUIRE(stat("/proc/self/ns/pid", &ns) == 0);
  struct Case {
    std::string host;
    uint64_t pid_namespace;
    bool replaced;
  };
  for (const Case& c : {Case{host, 0, true}, Case{host, uint64_t(ns.st_ino), true},
                        Case{"another-host", uint64_t(ns.st_ino), false}, Case{host, uint64_t(ns.st_ino) + 1, false}}) {
    INFO(c.host << " " << c.pid_namespace);
    std::string dir = e2e::temp_dir(), path = dir + "/run.trace";
    crafted::CraftedTrace t;
    t.pid = 4194303;  // (no such process here: the kernel's largest pid)
    t.hostname = c.host;
    t.pid_namespace = c.pid_namespace;
    t.process({"elsewhere"}, "/bin/elsewhere");
    t.alloc(0x10000000, 1 << 20);
    t.write(path);
    e2e::Result r = e2e::run({{e2e::program("lifecycle"), "exit-code", "0"}, {{"VRAMTRACE_OUTPUT", path}}});
    REQUIRE(r.exit_code == 0);
    CHECK((e2e::load(path).info.pid != 4194303u) == c.replaced);  // run.trace: the new process's, or kept
    CHECK(e2e::files_in(dir).size() == (c.replaced ? 1u : 2u));  // else the new one is run.trace.<pid>
  }
}

TEST_CASE("the configuration is the one the program started with: a chdir or clearenv before its first allocation") {
  // The trace is configured at the first memory call; a relative VRAMTRACE_OUTPUT (or the default,
  // the working directory) was resolved against wherever the program had moved by then, and a
  // program that emptied its environment lost every setting (the trace went to its new cwd).
  std::string start = e2e::temp_dir();
  REQUIRE(mkdir((start + "/traces").c_str(), 0755) == 0);
  REQUIRE(mkdir((start + "/elsewhere").c_str(), 0755) == 0);
  e2e::Spec s{{e2e::program("lifecycle"), "chdir-first", "elsewhere"}, {{"VRAMTRACE_OUTPUT", "traces"}}};
  s.cwd = start;
  e2e::Result r = e2e::run(s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(start + "/traces").size() == 1);
  CHECK(e2e::files_in(start + "/elsewhere").empty());  // (was a file named "traces" there)
  // The default output (VRAMTRACE_OUTPUT unset: sh drops any the harness has) is the directory it
  // started in too.
  e2e::Spec d{{"sh", "-c", "unset VRAMTRACE_OUTPUT; exec \"$@\"", "sh", e2e::program("lifecycle"), "chdir-first",
               "elsewhere"},
              {}};
  d.cwd = start;
  r = e2e::run(d);
  CHECK(r.exit_code == 0);
  size_t in_start = 0;
  for (const std::string& f : e2e::files_in(start)) in_start += f.find("/vramtrace.") != std::string::npos;
  CHECK(in_start == 1);
  CHECK(e2e::files_in(start + "/elsewhere").empty());
  // clearenv: VRAMTRACE_OUTPUT (and the rest) as the program started with them.
  std::string out = e2e::temp_dir();
  e2e::Spec c{{e2e::program("lifecycle"), "clearenv-first"}, {{"VRAMTRACE_OUTPUT", out}}};
  c.cwd = start;
  r = e2e::run(c);
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(out).size() == 1);
}

TEST_CASE("a program at its descriptor limit: no trace, and the line that says why still reaches stderr") {
  // The line was written through a duplicate of stderr; with no descriptor to spare it was lost.
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("lifecycle"), "fds-exhausted"}, {{"VRAMTRACE_OUTPUT", dir + "/t.trace"}}});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir).empty());
  CHECK(r.err.find("cannot create trace file " + dir + "/t.trace: Too many open files; tracing off") != std::string::npos);
}
