// The `vramtrace` command line: run, dump, info, and how every command writes its outputs.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

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

TEST_CASE("outputs: an input or a trace is never overwritten, a failed write keeps the old file, stdout errors count") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir + "/in.trace", "--", e2e::program("lookup_direct")});
  REQUIRE(r.exit_code == 0);
  const std::string trace = dir + "/in.trace";
  struct stat before;
  REQUIRE(stat(trace.c_str(), &before) == 0);
  auto unchanged = [&] {
    struct stat now;
    return stat(trace.c_str(), &now) == 0 && now.st_ino == before.st_ino && now.st_size == before.st_size;
  };
  // The input itself, through each command that writes a file; then another trace.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"report", trace, "-o", trace},
           {"summary", trace, "-o", trace},
           {"diff", trace, trace, "-o", trace},
           {"export", "--folded", trace, trace},
           {"export", "--perfetto", trace, trace},
           {"report", trace, "--format", "html", "-o", trace}}) {
    INFO(args[0] << " " << args[1]);
    r = cli(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "vramtrace: cannot write " + trace + ": it is this command's input (name another output)\n");
    CHECK(unchanged());
  }
  REQUIRE(system(("cp " + trace + " " + dir + "/other.trace").c_str()) == 0);
  r = cli({"report", trace, "-o", dir + "/other.trace"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("it is a vramtrace trace (name another output)") != std::string::npos);

  // A write that fails (the file size limit) leaves the old file whole and no temporary file.
  const std::string old_file = dir + "/report.html";
  REQUIRE(system(("echo OLD > " + old_file).c_str()) == 0);
  e2e::Spec s{{e2e::cli(), "report", trace, "--format", "html", "-o", old_file}, {}};
  s.preload = false;
  s.fsize_limit = 4096;
  r = e2e::run(s);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: cannot write " + old_file + ": File too large\n");
  std::string left;
  for (const std::string& f : e2e::files_in(dir)) left += f.substr(dir.size() + 1) + " ";
  CHECK(left == "in.trace other.trace report.html ");
  FILE* f = fopen(old_file.c_str(), "r");
  REQUIRE(f);
  char text[8] = {};
  CHECK(fread(text, 1, sizeof text - 1, f) == 4);
  fclose(f);
  CHECK(std::string(text) == "OLD\n");

  // A symlink to a device is written through, never replaced; one to a file keeps pointing there.
  REQUIRE(symlink("/dev/null", (dir + "/null").c_str()) == 0);
  r = cli({"export", "--perfetto", dir + "/null", trace});
  CHECK(r.exit_code == 0);
  struct stat l;
  REQUIRE(lstat((dir + "/null").c_str(), &l) == 0);
  CHECK(S_ISLNK(l.st_mode));
  REQUIRE(symlink("report.html", (dir + "/link.html").c_str()) == 0);
  r = cli({"report", trace, "-o", dir + "/link.html"});
  CHECK(r.exit_code == 0);
  REQUIRE(lstat((dir + "/link.html").c_str(), &l) == 0);
  CHECK(S_ISLNK(l.st_mode));
  struct stat st;
  REQUIRE(stat(old_file.c_str(), &st) == 0);
  CHECK(st.st_size > 100);  // the report went to the file the link names

  // stdout that cannot be written: one line and status 2, for each command that prints.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"report", trace}, {"summary", trace}, {"dump", trace}, {"info", trace}, {"export", "--folded", "-", trace}}) {
    INFO(args[0]);
    e2e::Spec full{{"sh", "-c", "exec \"$@\" > /dev/full", "sh", e2e::cli()}, {}};
    full.argv.insert(full.argv.end(), args.begin(), args.end());
    full.preload = false;
    r = e2e::run(full);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "vramtrace: cannot write the output (stdout): No space left on device\n");
  }
}

TEST_CASE("vramtrace run: a -- after the command is the command's, an unknown option before it is refused") {
  e2e::Result r = cli({"run", "-o", e2e::temp_dir(), "/bin/echo", "a", "--", "b"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "a -- b\n");
  r = cli({"run", "-o", e2e::temp_dir(), "--", "/bin/echo", "a", "--", "b"});
  CHECK(r.out == "a -- b\n");
  r = cli({"run", "--bogus", "--", "/bin/true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: run: unknown option --bogus (usage: vramtrace run [-o PATH] -- CMD ARGS...)\n");
}

TEST_CASE("vramtrace run returns the command's status when its own stderr has no reader") {
  // `vramtrace run ... 2>&1 | head -1` in CI: the lines run prints after the command ended met
  // a closed pipe, and SIGPIPE made the status 141.
  for (const char* code : {"0", "4"}) {
    e2e::Spec s{{e2e::cli(), "run", "-o", e2e::temp_dir(), "--", e2e::program("lifecycle"), "exit-code", code}, {}};
    s.preload = false;
    s.stderr_to = e2e::Spec::Stderr::BrokenPipe;
    e2e::Result r = e2e::run(s);
    CHECK(r.exit_code == atoi(code));
  }
}

TEST_CASE("vramtrace run: a VRAMTRACE_LIBRARY that is no library is refused, and a vanished output directory is named") {
  std::string dir = e2e::temp_dir();
  // A directory or a text file would be skipped by the loader: the run went on untraced and said
  // "the program made no CUDA memory call".
  for (const std::string& lib : {dir, std::string(VT_E2E_SOURCE_DIR "/harness.h")}) {
    e2e::Spec s{{e2e::cli(), "run", "-o", dir, "--", e2e::program("lookup_direct")}, {{"VRAMTRACE_LIBRARY", lib}}};
    s.preload = false;
    e2e::Result r = e2e::run(s);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "vramtrace: " + lib +
                       " is not libvramtrace.so (not an ELF shared object; VRAMTRACE_LIBRARY names the library)\n");
  }
  // A per-process directory (%p) under a directory that does not exist: refused before running.
  e2e::Result bad = cli({"run", "-o", dir + "/no-such/%p/x.trace", "--", e2e::program("lookup_direct")});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "vramtrace: output directory " + dir + "/no-such does not exist (-o " + dir +
                       "/no-such/%p/x.trace: each process's directory goes in it)\n");
  // The output directory removed while the program ran: said as such.
  std::string out = e2e::temp_dir() + "/gone/";
  e2e::Result r = cli({"run", "-o", out, "--", "sh", "-c", "rm -rf \"$1\"", "sh", out});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("no trace written: the output directory") != std::string::npos);
  CHECK(r.err.find("is gone") != std::string::npos);
}

TEST_CASE("a double dash ends the options of every command: a trace named like an option can be read") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir + "/-odd.trace", "--", e2e::program("lookup_direct")});
  REQUIRE(r.exit_code == 0);
  e2e::Spec s{{e2e::cli(), "summary", "--", "-odd.trace"}, {}};
  s.preload = false;
  s.cwd = dir;
  r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("vramtrace summary: -odd.trace") == 0);
}
