// `vramtrace run [-o PATH] -- CMD ARGS...`: runs CMD with libvramtrace.so preloaded, passes its
// exit status through (128+N for a signal), and lists the trace files the run produced (found by
// the session id every traced process writes into its header).
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "regular_file.h"
#include "trace_format.h"

namespace vt::cli {

namespace {

pid_t g_child = -1;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string dir_of(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
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

std::string new_session_id() {
  std::random_device rd;
  char b[40];
  snprintf(b, sizeof b, "%08x%08x-%d", rd(), rd(), int(getpid()));
  return b;
}

std::string session_of(const std::string& path) {
  std::string why;
  int fd = analyzer::open_regular_file(path, &why, analyzer::kNoFollow);  // a FIFO in the directory never blocks us
  if (fd < 0) return {};
  format::FileHeader h;
  ssize_t n = pread(fd, &h, sizeof h, 0);
  close(fd);
  if (n != ssize_t(sizeof h) || memcmp(h.magic, format::kFileMagic, 8) != 0) return {};
  return std::string(h.session, strnlen(h.session, sizeof h.session));
}

std::vector<std::string> traces_of_session(const std::string& dir, const std::string& session) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    if (session_of(path) == session) out.push_back(path);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int run_command(const RunOptions& opt) {
  std::string lib = find_library();
  if (lib.empty() || access(lib.c_str(), R_OK) != 0) {
    error_line("cannot find libvramtrace.so (looked for " + (lib.empty() ? std::string("../lib") : lib) +
               "; set VRAMTRACE_LIBRARY to its path)");
    return 2;
  }

  std::string output = absolute(opt.output.empty() ? std::string(".") : opt.output);
  bool dir_mode = is_dir(output) || output.back() == '/';
  std::string out_dir = dir_mode ? output : dir_of(output);
  if (out_dir.find('%') == std::string::npos && !is_dir(out_dir)) {
    error_line("output directory " + out_dir + " does not exist");
    return 2;
  }
  if (out_dir.find('%') == std::string::npos && access(out_dir.c_str(), W_OK) != 0) {
    error_line("output directory " + out_dir + " is not writable: " + strerror(errno));
    return 2;
  }

  std::string session = new_session_id();
  std::string preload = lib;
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;

  std::vector<char*> args;
  for (const std::string& a : opt.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Terminal signals reach the child directly (same process group); the ones sent to us by
  // name (kill, a scheduler) are passed on.
  struct sigaction ignore {}, fwd {}, old_int {}, old_quit {}, old_term {}, old_hup {};
  ignore.sa_handler = SIG_IGN;
  fwd.sa_handler = forward_signal;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);

  pid_t child = fork();
  if (child < 0) {
    error_line(std::string("cannot fork: ") + strerror(errno));
    return 2;
  }
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("VRAMTRACE_OUTPUT", output.c_str(), 1);
    setenv("VRAMTRACE_SESSION", session.c_str(), 1);
    if (opt.no_kernels) setenv("VRAMTRACE_KERNELS", "0", 1);
    // NVTX ranges reach CUPTI only through NVTX's injection hook: point it at libvramtrace, which
    // hands NVTX to the libcupti it records with (cupti/nvtx_injection.cpp). A tool's own wins.
    const char* kernels = getenv("VRAMTRACE_KERNELS");
    const char* nvtx = getenv("NVTX_INJECTION64_PATH");
    if (!(kernels && strcmp(kernels, "0") == 0) && !(nvtx && *nvtx)) setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
    execvp(args[0], args.data());
    int err = errno;
    std::string msg = "vramtrace: cannot run " + opt.command[0] + ": " + strerror(err) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;

  std::string scan_dir = out_dir.find('%') == std::string::npos ? out_dir : std::string();
  std::vector<std::string> traces = scan_dir.empty() ? std::vector<std::string>{} : traces_of_session(scan_dir, session);
  if (traces.empty()) {
    std::cerr << "vramtrace: no trace written (the program made no CUDA memory call"
              << (scan_dir.empty() ? ", or the output pattern hides the directory" : "") << ")\n";
  } else {
    std::cerr << "vramtrace: " << traces.size() << " trace file" << (traces.size() > 1 ? "s" : "") << ":\n";
    for (const std::string& t : traces) std::cerr << "  " << t << "\n";
  }
  return code;
}

}  // namespace vt::cli
