// The `vramtrace` command line: run, dump, info.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;  // the CLI sets LD_PRELOAD itself
  return e2e::run(s);
}

}  // namespace

TEST_CASE("vramtrace run traces the command, returns its exit code and lists the traces") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "fork"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 2);
  CHECK(r.err.find("2 trace files") != std::string::npos);
  for (const auto& f : files) CHECK(r.err.find(f) != std::string::npos);

  r = cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "exit-code", "7"});
  CHECK(r.exit_code == 7);
  CHECK(r.err.find("1 trace file") != std::string::npos);

  r = cli({"run", "-o", dir, "--", "sh", "-c", "kill -9 $$"});
  CHECK(r.exit_code == 128 + 9);
  CHECK(r.err.find("no trace written") != std::string::npos);
}

TEST_CASE("vramtrace run: a fixed file path, usage errors and missing commands") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir + "/mine.trace", "--", e2e::program("lookup_direct")});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir) == std::vector<std::string>{dir + "/mine.trace"});

  r = cli({"run", "-o", "/nonexistent-dir/x.trace", "--", "true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: output directory /nonexistent-dir does not exist (end -o with / to have it created)\n");

  r = cli({"run"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no command given") != std::string::npos);

  r = cli({"run", "--", "/nonexistent-program"});
  CHECK(r.exit_code == 127);
  CHECK(r.err.find("cannot run /nonexistent-program") != std::string::npos);

  r = cli({"frobnicate"});
  CHECK(r.exit_code == 2);
}

TEST_CASE("vramtrace run -o DIR/ creates the directory, 0700, parents too, as docs/ci.md's recipe needs") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir + "/traces/", "--", e2e::program("lookup_direct")});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  auto files = e2e::files_in(dir + "/traces");
  CHECK(files.size() == 1);
  struct stat st;
  REQUIRE(stat((dir + "/traces").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  r = cli({"run", "-o", dir + "/a/b/c/", "--", e2e::program("lookup_direct")});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir + "/a/b/c").size() == 1);
  REQUIRE(stat((dir + "/a/b").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // A relative -o, from the job's working directory, as in docs/ci.md.
  e2e::Spec s{{"sh", "-c", "cd " + dir + " && " + e2e::cli() + " run -o rel/ -- " + e2e::program("lookup_direct")}, {}};
  s.preload = false;
  r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir + "/rel").size() == 1);
  // An existing symlink to a directory is used as that directory; a file that is a symlink is refused.
  REQUIRE(symlink((dir + "/rel").c_str(), (dir + "/via").c_str()) == 0);
  r = cli({"run", "-o", dir + "/via/", "--", e2e::program("lookup_direct")});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir + "/rel").size() == 2);
  REQUIRE(symlink("/etc/passwd", (dir + "/link.trace").c_str()) == 0);
  r = cli({"run", "-o", dir + "/link.trace", "--", "sh", "-c", "touch " + dir + "/ran"});
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  CHECK(r.err.find("is a symlink") != std::string::npos);
  CHECK(access((dir + "/ran").c_str(), F_OK) != 0);
}

TEST_CASE("vramtrace run: a bad -o is blamed on -o, a device is refused, and the program is not run") {
  std::string dir = e2e::temp_dir();
  std::string marker = dir + "/ran";
  e2e::Result r = cli({"run", "-o", dir + "/x.%q", "--", "sh", "-c", "touch " + marker});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: -o '" + dir + "/x.%q': unknown %-escape (use %p for the pid, %h for the host name, %% for %)\n");
  CHECK(access(marker.c_str(), F_OK) != 0);

  r = cli({"run", "-o", "/dev/full", "--", "sh", "-c", "touch " + marker + " && exec " + e2e::program("lookup_direct")});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: -o /dev/full is a character device, not a directory or a regular file: no trace can be written "
                 "there (nothing was run)\n");
  CHECK(access(marker.c_str(), F_OK) != 0);
  CHECK(system("ls /dev/full.* >/dev/null 2>&1") != 0);  // no /dev/full.<pid> files either (root could create them)

  // Any other setting that would turn tracing off: one line, the library's reason and the refusal.
  e2e::Spec s{{e2e::cli(), "run", "-o", dir, "--", "sh", "-c", "touch " + marker}, {{"VRAMTRACE_STACK_DEPTH", "deep"}}};
  s.preload = false;
  r = e2e::run(s);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: bad VRAMTRACE_STACK_DEPTH 'deep' (a number of frames, 0 to 256): tracing would be off "
                 "(nothing was run)\n");
  CHECK(access(marker.c_str(), F_OK) != 0);
}

TEST_CASE("vramtrace run says what really happened when no trace, or half a trace, was written") {
  std::string dir = e2e::temp_dir();
  // The command does not exist: no word about traces or CUDA calls.
  e2e::Result r = cli({"run", "-o", dir, "--", "/nonexistent-program"});
  CHECK(r.exit_code == 127);
  CHECK(r.err == "vramtrace: cannot run /nonexistent-program: No such file or directory (not found)\n");
  r = cli({"run", "-o", dir, "--", "no-such-command-vt"});
  CHECK(r.exit_code == 127);
  CHECK(r.err.find("(not found on PATH)") != std::string::npos);
  CHECK(r.err.find("no trace") == std::string::npos);
  std::string noexec = dir + "/noexec.sh";
  REQUIRE(system(("printf '#!/bin/sh\n' > " + noexec + " && chmod 0644 " + noexec).c_str()) == 0);
  e2e::Spec ne{{e2e::cli(), "run", "-o", dir, "--", noexec}, {}};
  ne.preload = false;
  ne.drop_privileges = true;  // root may execute anything with an x bit... and this has none
  r = e2e::run(ne);
  CHECK(r.exit_code == 126);
  CHECK(r.err.find("(not executable)") != std::string::npos);

  // Tracing stopped early (the file size limit): the trace is listed as incomplete.
  std::string big = e2e::temp_dir();
  e2e::Spec s{{e2e::cli(), "run", "-o", big, "--", e2e::program("threads"), "4", "50000"}, {}};
  s.preload = false;
  s.fsize_limit = 2 << 20;
  r = e2e::run(s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("tracing stopped, the program continues") != std::string::npos);  // the library's reason
  CHECK(r.err.find("(incomplete: tracing stopped early; the vramtrace line above says why)") != std::string::npos);

  // Not even the first MiB fits: no trace, and the reason is the limit, not the program.
  std::string small = e2e::temp_dir();
  s.argv = {e2e::cli(), "run", "-o", small, "--", e2e::program("lookup_direct")};
  s.fsize_limit = 512 << 10;
  r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(small).empty());
  CHECK(r.err.find("no trace written: the file size limit (ulimit -f, 524288 bytes) is below a trace's first MiB") !=
        std::string::npos);
  CHECK(r.err.find("no CUDA memory call") == std::string::npos);

  // A full file system (a 256 KiB tmpfs; needs the right to mount).
  std::string mnt = e2e::temp_dir();
  if (system(("mount -t tmpfs -o size=256k vt-full " + mnt + " 2>/dev/null").c_str()) != 0) {
    WARN("cannot mount a tmpfs here: the full-disk case is not checked");
  } else {
    r = cli({"run", "-o", mnt + "/", "--", e2e::program("lookup_direct")});
    CHECK(system(("umount " + mnt).c_str()) == 0);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("no trace written: the file system of " + mnt + " is full") != std::string::npos);
    CHECK(r.err.find("no CUDA memory call") == std::string::npos);
  }

  // VRAMTRACE_DISABLE: said as such.
  e2e::Spec d{{e2e::cli(), "run", "-o", dir, "--", e2e::program("lookup_direct")}, {{"VRAMTRACE_DISABLE", "1"}}};
  d.preload = false;
  r = e2e::run(d);
  CHECK(r.err.find("no trace written: tracing is disabled (VRAMTRACE_DISABLE=1)") != std::string::npos);
}

TEST_CASE("vramtrace dump prints one JSON object per event") {
  std::string dir = e2e::temp_dir();
  REQUIRE(cli({"run", "-o", dir, "--", e2e::program("lookup_direct")}).exit_code == 0);
  std::string trace = e2e::files_in(dir).at(0);
  e2e::Result r = cli({"dump", trace});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  // The memory events; the workload's two context creations (kind "code") come apart, the first
  // one before everything (made before the trace opened: held until then).
  std::vector<std::string> l, code;
  for (const std::string& line : e2e::lines(r.out))
    (nlohmann::json::parse(line)["kind"] == "code" ? code : l).push_back(line);
  REQUIRE(code.size() == 2);
  CHECK(nlohmann::json::parse(e2e::lines(r.out).at(0))["op"] == "cuDevicePrimaryCtxRetain");
  REQUIRE(l.size() == 39);
  auto first = nlohmann::json::parse(l[0]);
  CHECK(first["op"] == "cuMemAlloc_v2");
  CHECK(first["result"] == 0);
  CHECK(first["size"] == 1 << 20);
  CHECK(first["address"].is_number_unsigned());
  CHECK(first["tid"].is_number());
  CHECK(first["t_ns"].is_number());
  CHECK(first["device"] == 0);
  auto oom = nlohmann::json::parse(l[34]);
  CHECK(oom["result"] == 2);
  CHECK(oom["size"] == 1ull << 40);
  CHECK(oom["total_bytes"] == 16ull << 30);
  CHECK(oom["free_bytes"].is_number_unsigned());
  auto create = nlohmann::json::parse(l[20]);
  CHECK(create["op"] == "cuMemCreate");
  CHECK(create["location"]["type"] == "device");
  CHECK(create["handle"].is_number_unsigned());

  r = cli({"dump", "--meta", trace});
  auto meta = nlohmann::json::parse(e2e::lines(r.out).at(0));
  CHECK(meta["record"] == "process");
  CHECK(meta["driver_version"] == 13000);

  r = cli({"info", trace});
  auto info = nlohmann::json::parse(r.out);
  CHECK(info["events"] == 41);
  CHECK(info["failed_events"] == 1);
  CHECK(info["closed_cleanly"] == true);
  CHECK(info["devices"].size() == 1);
}

TEST_CASE("vramtrace dump on a torn trace dumps what it holds and says so - bad paths are one line") {
  std::string dir = e2e::temp_dir();
  cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "crash-kill", "100"});
  std::string trace = e2e::files_in(dir).at(0);
  e2e::Result r = cli({"dump", trace});
  CHECK(r.exit_code == 0);
  CHECK(e2e::lines(r.out).size() == 101);  // 100 allocations and the primary context's creation
  CHECK(r.err.find("without a clean close") != std::string::npos);

  r = cli({"dump", dir + "/missing.trace"});
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  CHECK(r.err.find("cannot open") != std::string::npos);
}
