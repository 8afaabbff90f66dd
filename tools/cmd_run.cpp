// `vramtrace run [-o PATH] -- CMD ARGS...`: runs CMD with libvramtrace.so preloaded, passes its
// exit status through (killed by the same signal when one killed it), and lists the trace files the run produced (found by
// the session id every traced process writes into its header), or says why there is none: the
// command could not be run, the disk is full, tracing is disabled... -o is checked (and a
// directory named with a trailing '/' created) before anything runs: tools/run_output.h.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
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

#include <CLI/CLI.hpp>
#include "usage.h"
#include "commands.h"
#include "env_config.h"
#include "regular_file.h"
#include "run_once_dir.h"
#include "run_output.h"
#include "spawn.h"
#include "terminal_escape.h"
#include "file_header.h"
#include "preload_library.h"

namespace vt::cli {

void die_like_the_child(int sig) {
  std::cout.flush();
  std::cerr.flush();
  prctl(PR_SET_DUMPABLE, 0);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
}

namespace {

pid_t g_child = -1;

// A signal the terminal sent (Ctrl-C, Ctrl-backslash, hang-up) went to the whole foreground process group,
// the child included: passing it on would deliver it twice (a second KeyboardInterrupt in
// Python's clean-up). One a process sent to us by name (kill, a scheduler, a CI runner's
// timeout) reaches only us and is passed on.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && !(info && info->si_code == SI_KERNEL)) kill(g_child, sig);
}

// getrandom(2), not std::random_device (arc4random in libstdc++: glibc 2.36; see report_html.cpp).
std::string new_session_id() {
  uint32_t r[2] = {uint32_t(getpid()), uint32_t(time(nullptr))};
  (void)!getrandom(r, sizeof r, 0);
  char b[40];
  snprintf(b, sizeof b, "%08x%08x-%d", r[0], r[1], int(getpid()));
  return b;
}

// The header of `path` when it is a readable trace: else false.
bool header_of(const std::string& path, format::FileHeader* h) {
  std::string why;
  int fd = analyzer::open_regular_file(path, &why, analyzer::kNoFollow);  // a FIFO in the directory never blocks us
  if (fd < 0) return false;
  uint64_t size = 0;
  format::HeaderStatus s = format::read_header(fd, h, &size);
  close(fd);
  return s == format::HeaderStatus::kValid;
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

namespace {
// A regular file that starts like an ELF object.
bool is_elf_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char magic[4] = {};
  bool elf = read(fd, magic, 4) == 4 && memcmp(magic, "\x7f" "ELF", 4) == 0;
  close(fd);
  return elf;
}
}  // namespace

int run_command(const RunOptions& opt, int* killed_by_signal) {
  std::string lib = preload_library_path();
  if (lib.empty() || access(lib.c_str(), R_OK) != 0) {
    error_line("cannot find libvramtrace.so (looked for " + (lib.empty() ? std::string("../lib") : lib) +
               "; set VRAMTRACE_LIBRARY to its path)");
    return 2;
  }
  if (!is_elf_file(lib)) {  // (a directory, a script: the loader would skip it and nothing be traced)
    error_line(lib + " is not libvramtrace.so (not an ELF shared object; VRAMTRACE_LIBRARY names the library)");
    return 2;
  }

  // The LD_AUDIT module sits beside the library (build/lib, the install's lib, the wheel's lib).
  std::string audit;
  if (opt.audit) {
    audit = lib.substr(0, lib.rfind('/') + 1) + "libvramtrace_audit.so";
    if (access(audit.c_str(), R_OK) != 0) {
      error_line("--audit: cannot find " + audit + " (it is built and installed beside libvramtrace.so)");
      return 2;
    }
  }

  RunOutput out;
  std::string err;
  if (!prepare_output(opt.output, &out, &err)) {
    error_line(err);
    return 2;
  }
  // The rest of the configuration as the library will read it (common/env_config.h): a bad value
  // would turn tracing off with the library's line, and a long job would run for nothing.
  if (!tracing_disabled()) {
    setenv("VRAMTRACE_OUTPUT", out.value.c_str(), 1);
    if (opt.no_kernels) setenv("VRAMTRACE_KERNELS", "0", 1);
    if (opt.no_cupti_memory) setenv("VRAMTRACE_CUPTI_MEMORY", "0", 1);
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

  // We outlive the child to list its traces: INT, QUIT, TERM and HUP are passed on (forward_signal),
  // the child decides what they mean, and its status is ours.
  struct sigaction fwd {}, old_int {}, old_quit {}, old_term {}, old_hup {};
  fwd.sa_sigaction = forward_signal;
  fwd.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGINT, &fwd, &old_int);
  sigaction(SIGQUIT, &fwd, &old_quit);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);

  // Held back from fork until g_child is set: one sent in between would otherwise be dropped.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  SpawnRequest req;
  req.argv = opt.command;
  req.in_child = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };
  req.forked = [&](pid_t pid) {
    g_child = pid;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };
  req.env = {{"LD_PRELOAD", preload}, {"VRAMTRACE_OUTPUT", out.value}, {"VRAMTRACE_SESSION", session}};
  if (opt.no_kernels) req.env.push_back({"VRAMTRACE_KERNELS", "0"});
  if (opt.no_cupti_memory) req.env.push_back({"VRAMTRACE_CUPTI_MEMORY", "0"});
  if (opt.audit) {
    const char* old = getenv("LD_AUDIT");
    req.env.push_back({"LD_AUDIT", old && *old ? audit + ":" + old : audit});
  }
  // NVTX ranges reach CUPTI only through NVTX's injection hook: point it at libvramtrace, which
  // hands NVTX to the libcupti it records with (cupti/nvtx_injection.cpp). A tool's own wins.
  const char* kernels = getenv("VRAMTRACE_KERNELS");
  const char* nvtx = getenv("NVTX_INJECTION64_PATH");
  if (!opt.no_kernels && !(kernels && strcmp(kernels, "0") == 0) && !(nvtx && *nvtx))
    req.env.push_back({"NVTX_INJECTION64_PATH", lib});
  Spawned child = spawn(req);
  if (child.pid < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    error_line(child.error);
    return 2;
  }
  int code = wait_exit_code(child.pid, killed_by_signal);
  if (code < 0) code = 1;
  // What follows only reports: a stderr whose reader is gone (`... 2>&1 | head`) must not turn the
  // command's status into our SIGPIPE's 141 (the command has run: it inherits nothing of this).
  signal(SIGPIPE, SIG_IGN);

  if (int e = child.exec_errno) {  // the command never ran: no trace to look for
    error_line(child.error +
               (e == ENOENT ? " (not found" + std::string(opt.command[0].find('/') == std::string::npos ? " on PATH" : "") + ")"
                : e == EACCES ? " (not executable)"
                              : ""));
    return code;
  }
  std::vector<RunTrace> traces = out.scan_dir.empty() ? std::vector<RunTrace>{} : traces_of_session(out.scan_dir, session);
  if (traces.empty()) {
    std::string why = out.scan_dir.empty() ? "" : no_trace_reason(out.scan_dir);
    if (why == kNoMemoryCall) {  // the libraries opened out of the hooks' reach may have made them
      std::string libs;
      for (const std::string& n : said_once.notes()) libs += (libs.empty() ? "" : ", ") + analyzer::terminal_escape(n);
      if (!libs.empty())
        why = "no CUDA memory call reached vramtrace; libraries out of the hooks' reach were opened, and any made "
              "from them are not recorded: " + libs + " (docs/interception.md, \"Known gaps\")";
    }
    error_line(out.scan_dir.empty() ? "no trace listed: %p in the output directory hides where the traces went"
                                    : "no trace written: " + why);
  } else {
    std::cerr << "vramtrace: " << traces.size() << " trace file" << (traces.size() > 1 ? "s" : "") << ":\n";
    for (const RunTrace& t : traces) std::cerr << "  " << analyzer::terminal_escape(t.path) << trace_note(t) << "\n";
  }
  return code;
}

void add_run_command(CLI::App& app, Commands& out) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* c = app.add_subcommand("run", "run a command with tracing: vramtrace run [-o PATH] -- CMD ARGS...");
  c->footer("CMD runs with libvramtrace.so preloaded; its exit status is returned (killed by the same signal when one ended it).\n"
            "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to vramtrace reach CMD.");
  c->add_option("-o,--output", run->output, "trace file, pattern (%p = pid, %h = host) or directory (default: current directory)");
  c->add_flag("--no-kernels", run->no_kernels, "record memory only: no kernel activity (CUPTI)");
  c->add_flag("--no-cupti-memory", run->no_cupti_memory, "kernels without CUPTI's allocation records (MEMORY2): VRAMTRACE_CUPTI_MEMORY=0");
  c->add_flag("--audit", run->audit,
              "also load libvramtrace_audit.so (LD_AUDIT): libraries opened with RTLD_DEEPBIND get the hooks too");
  c->prefix_command();
  Command cmd{c, [run, c](const Invocation& inv) {
                run->command = c->remaining();
                if (!run->command.empty() && run->command[0].size() > 1 && run->command[0][0] == '-') {
                  error_line("run: unknown option " + run->command[0] + " (usage: vramtrace run [-o PATH] -- CMD ARGS...)");
                  return kExitUsage;
                }
                // A `--` after the command began is the command's own argument (`run prog a -- b`).
                if (!run->command.empty() && inv.dashes) run->command.push_back("--");
                run->command.insert(run->command.end(), inv.after_dashes.begin(), inv.after_dashes.end());
                if (run->command.empty()) {
                  error_line("run: no command given (usage: vramtrace run [-o PATH] -- CMD ARGS...)");
                  return kExitUsage;
                }
                int killed_by = 0;
                int code = run_command(*run, &killed_by);
                if (killed_by) die_like_the_child(killed_by);  // (after run_command's clean-up)
                return code;
              }};
  cmd.analyzes = false;
  out.push_back(std::move(cmd));
}

}  // namespace vt::cli
