// `vramtrace run [-o PATH] -- CMD ARGS...`: runs CMD with libvramtrace.so preloaded, passes its
// exit status through (128+N for a signal), and lists the trace files the run produced (found by
// the session id every traced process writes into its header), or says why there is none: the
// command could not be run, the disk is full, tracing is disabled... -o is checked (and a
// directory named with a trailing '/' created) before anything runs: tools/run_output.h.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <ctime>
#include <string>
#include <vector>

#include "commands.h"
#include "config.h"
#include "regular_file.h"
#include "run_once_dir.h"
#include "run_output.h"
#include "terminal_escape.h"
#include "trace_format.h"

namespace vt::cli {

namespace {

pid_t g_child = -1;

// A signal the terminal sent (Ctrl-C, Ctrl-backslash, hang-up) went to the whole foreground process group,
// the child included: passing it on would deliver it twice (a second KeyboardInterrupt in
// Python's clean-up). One a process sent to us by name (kill, a scheduler, a CI runner's
// timeout) reaches only us and is passed on.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && !(info && info->si_code == SI_KERNEL)) kill(g_child, sig);
}

std::string dir_of(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// libvramtrace.so beside the binary: build/bin -> build/lib, <prefix>/bin -> <prefix>/lib.
std::string find_library() {
  if (const char* env = getenv("VRAMTRACE_LIBRARY"); env && *env) return env;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  exe[n] = '\0';
  std::string lib = dir_of(dir_of(exe)) + "/lib/libvramtrace.so";
  char real[PATH_MAX];
  return realpath(lib.c_str(), real) ? std::string(real) : lib;
}

// getrandom(2), not std::random_device (arc4random in libstdc++: glibc 2.36; see report_html.cpp).
std::string new_session_id() {
  uint32_t r[2] = {uint32_t(getpid()), uint32_t(time(nullptr))};
  (void)!getrandom(r, sizeof r, 0);
  char b[40];
  snprintf(b, sizeof b, "%08x%08x-%d", r[0], r[1], int(getpid()));
  return b;
}

// The header of `path` when it is a trace: else false.
bool header_of(const std::string& path, format::FileHeader* h) {
  std::string why;
  int fd = analyzer::open_regular_file(path, &why, analyzer::kNoFollow);  // a FIFO in the directory never blocks us
  if (fd < 0) return false;
  ssize_t n = pread(fd, h, sizeof *h, 0);
  close(fd);
  return n == ssize_t(sizeof *h) && memcmp(h->magic, format::kFileMagic, 8) == 0;
}

struct RunTrace {
  std::string path;
  format::FileHeader header;
};

std::vector<RunTrace> traces_of_session(const std::string& dir, const std::string& session) {
  std::vector<RunTrace> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    RunTrace t{dir + (dir.back() == '/' ? "" : "/") + name, {}};
    if (header_of(t.path, &t.header) && std::string(t.header.session, strnlen(t.header.session, sizeof t.header.session)) == session)
      out.push_back(t);
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const RunTrace& a, const RunTrace& b) { return a.path < b.path; });
  return out;
}

// What to add after a trace's path: why it is not the whole story, if it is not.
std::string trace_note(const RunTrace& t) {
  if (t.header.flags & format::kHeaderTracingFailed)
    return "  (incomplete: tracing stopped early; the vramtrace line above says why)";
  return "";
}

}  // namespace

int run_command(const RunOptions& opt) {
  std::string lib = find_library();
  if (lib.empty() || access(lib.c_str(), R_OK) != 0) {
    error_line("cannot find libvramtrace.so (looked for " + (lib.empty() ? std::string("../lib") : lib) +
               "; set VRAMTRACE_LIBRARY to its path)");
    return 2;
  }

  RunOutput out;
  std::string err;
  if (!prepare_output(opt.output, &out, &err)) {
    error_line(err);
    return 2;
  }
  // The rest of the configuration as the library will read it (interpose/config.h): a bad value
  // would turn tracing off with the library's line, and a long job would run for nothing.
  if (!tracing_disabled()) {
    setenv("VRAMTRACE_OUTPUT", out.value.c_str(), 1);
    if (opt.no_kernels) setenv("VRAMTRACE_KERNELS", "0", 1);
    Config cfg;
    char why[1024] = "";
    if (!load_config(&cfg, long(getpid()), why, sizeof why)) {
      error_line(std::string(why) + ": tracing would be off (nothing was run)");
      return 2;
    }
  }

  std::string session = new_session_id();
  RunOnceDir said_once(session);  // the CUPTI line, a bad setting: once for the run, not per process
  std::string preload = lib;
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;

  std::vector<char*> args;
  for (const std::string& a : opt.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // We outlive the child to list its traces: INT, QUIT, TERM and HUP are passed on (forward_signal),
  // the child decides what they mean, and its status is ours.
  struct sigaction fwd {}, old_int {}, old_quit {}, old_term {}, old_hup {};
  fwd.sa_sigaction = forward_signal;
  fwd.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGINT, &fwd, &old_int);
  sigaction(SIGQUIT, &fwd, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);

  // The child reports a failed exec through a close-on-exec pipe: EOF means the command runs.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    error_line(std::string("cannot create a pipe: ") + strerror(errno));
    return 2;
  }
  // Held back from fork until g_child is set: one sent in between would otherwise be dropped.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  pid_t child = fork();
  if (child < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    error_line(std::string("cannot fork: ") + strerror(errno));
    return 2;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    close(exec_pipe[0]);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("VRAMTRACE_OUTPUT", out.value.c_str(), 1);
    setenv("VRAMTRACE_SESSION", session.c_str(), 1);
    if (opt.no_kernels) setenv("VRAMTRACE_KERNELS", "0", 1);
    // NVTX ranges reach CUPTI only through NVTX's injection hook: point it at libvramtrace, which
    // hands NVTX to the libcupti it records with (cupti/nvtx_injection.cpp). A tool's own wins.
    const char* kernels = getenv("VRAMTRACE_KERNELS");
    const char* nvtx = getenv("NVTX_INJECTION64_PATH");
    if (!(kernels && strcmp(kernels, "0") == 0) && !(nvtx && *nvtx)) setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
    execvp(args[0], args.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(e == ENOENT ? 127 : 126);
  }
  close(exec_pipe[1]);
  g_child = child;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  if (got == ssize_t(sizeof exec_errno)) {  // the command never ran: no trace to look for
    error_line("cannot run " + opt.command[0] + ": " + strerror(exec_errno) +
               (exec_errno == ENOENT ? " (not found" + std::string(opt.command[0].find('/') == std::string::npos ? " on PATH" : "") + ")"
                : exec_errno == EACCES ? " (not executable)"
                                       : ""));
    return code;
  }
  std::vector<RunTrace> traces = out.scan_dir.empty() ? std::vector<RunTrace>{} : traces_of_session(out.scan_dir, session);
  if (traces.empty()) {
    error_line(out.scan_dir.empty() ? "no trace listed: %p in the output directory hides where the traces went"
                                    : "no trace written: " + no_trace_reason(out.scan_dir));
  } else {
    std::cerr << "vramtrace: " << traces.size() << " trace file" << (traces.size() > 1 ? "s" : "") << ":\n";
    for (const RunTrace& t : traces) std::cerr << "  " << analyzer::terminal_escape(t.path) << trace_note(t) << "\n";
  }
  return code;
}

}  // namespace vt::cli
