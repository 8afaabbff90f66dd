// See harness.h.
#include "harness.h"

#include "../shared/test_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace e2e {

namespace {
std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

std::string program(const std::string& name) { return std::string(VT_PROGRAMS) + "/" + name; }
std::string cli() {
  // tests/sanitizers.sh runs these tests against a sanitized build of the same CLI.
  const char* other = getenv("VRAMTRACE_TEST_CLI");
  return other && *other ? other : VT_CLI;
}

Result run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), cli());
  Spec s{args, {}};
  s.preload = false;
  s.timeout_s = 30;
  return run(s);
}

std::string temp_dir() {
  std::string d = vt::test_dirs::make("/tmp/vt-e2e-");  // removed when the test process exits
  chmod(d.c_str(), 0777);
  return d;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

Result run(const Spec& spec) {
  std::string io = temp_dir();
  std::string out_path = io + "/stdout", err_path = io + "/stderr";
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    dup2(o, 1);
    if (spec.stderr_to == Spec::Stderr::File) {
      dup2(e, 2);
    } else if (spec.stderr_to == Spec::Stderr::BrokenPipe) {
      int p[2];
      if (pipe(p) != 0) _exit(97);
      close(p[0]);  // no reader: a write gets EPIPE and raises SIGPIPE
      dup2(p[1], 2);
      close(p[1]);
    } else {
      close(2);
    }
    if (o > 2) close(o);
    if (e > 2) close(e);
    // What the program would get from a shell: default dispositions, nothing blocked.
    signal(SIGPIPE, SIG_DFL);
    signal(SIGXFSZ, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) _exit(96);
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    // Kernel activity off unless a test asks for it: with the simulated driver the recorder would
    // say on stderr that it loads no libcupti (tests/cupti/ covers CUPTI with a stand-in).
    setenv("VRAMTRACE_KERNELS", "0", 1);
    if (spec.preload) setenv("LD_PRELOAD", VT_LIBRARY, 1);
    else unsetenv("LD_PRELOAD");
    for (const auto& [k, v] : spec.env) setenv(k.c_str(), v.c_str(), 1);
    if (spec.fsize_limit >= 0) {
      rlimit lim{rlim_t(spec.fsize_limit), rlim_t(spec.fsize_limit)};
      setrlimit(RLIMIT_FSIZE, &lim);
    }
    if (spec.drop_privileges && geteuid() == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
    }
    std::vector<char*> args;
    for (const std::string& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(98);
  }
  Result r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.timeout_s);
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
  r.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(io.c_str());
  return r;
}

std::vector<std::string> Trace::ops() const {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.op ? e.op->name : "?");
  return out;
}

Trace load(const std::string& path) {
  std::string err;
  auto reader = vt::analyzer::TraceReader::open(path, &err);
  INFO(err);
  REQUIRE(reader);
  Trace t;
  vt::analyzer::Record r;
  while (reader->next(&r)) {
    if (!r.is_event()) {
      ++t.metadata[r.tag];
      continue;
    }
    const bool code = r.op && (r.op->kind == vt::MemKind::Code || r.op->kind == vt::MemKind::PoolConfig);
    (code ? t.code_events : t.events).push_back(r);
  }
  t.info = reader->process();
  t.problems = reader->problems();
  t.data_lost = reader->data_lost();
  return t;
}

}  // namespace e2e
