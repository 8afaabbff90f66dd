// See isolate.h.
#include "isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vt::doctor {

namespace {

constexpr size_t kMaxCapture = 1 << 20;

long long now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

// Reads every fd to EOF (or the deadline), then reaps the child, killing it on timeout (with
// `group`, its whole process group: what it started dies with it). Returns the wait status;
// *timed_out tells whether the deadline hit first.
int collect(pid_t pid, std::vector<std::pair<int, std::string*>> fds, int timeout_s, bool* timed_out,
            bool group = false) {
  const pid_t target = group ? -pid : pid;
  long long deadline = now_ms() + timeout_s * 1000LL;
  *timed_out = false;
  while (!fds.empty()) {
    long long left = deadline - now_ms();
    if (left <= 0) {
      *timed_out = true;
      break;
    }
    std::vector<pollfd> p;
    for (auto& f : fds) p.push_back({f.first, POLLIN, 0});
    int n = poll(p.data(), p.size(), int(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (size_t i = p.size(); i-- > 0;) {
      if (!p[i].revents) continue;
      char buf[65536];
      ssize_t got = read(fds[i].first, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close(fds[i].first);
        fds.erase(fds.begin() + long(i));
        continue;
      }
      std::string* s = fds[i].second;
      if (s->size() < kMaxCapture) s->append(buf, std::min(size_t(got), kMaxCapture - s->size()));
    }
  }
  for (auto& f : fds) close(f.first);
  // A child that closed its pipes but lingers (a driver thread) is killed at the deadline too.
  if (*timed_out) kill(target, SIGKILL);
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (!*timed_out && now_ms() >= deadline) {
      *timed_out = true;
      kill(target, SIGKILL);
    }
    usleep(2000);
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended abnormally";
}

void quiet_stdio() {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
  }
}

}  // namespace

Isolated run_isolated(const std::function<nlohmann::json()>& fn, int timeout_s) {
  Isolated res;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    res.error = std::string("cannot create a pipe: ") + strerror(errno);
    return res;
  }
  fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    res.error = std::string("cannot fork: ") + strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return res;
  }
  if (pid == 0) {
    close(fds[0]);
    // Libraries print to stdout/stderr (driver warnings, fakes' config errors); the report
    // must stay clean, and everything that matters comes back as data.
    quiet_stdio();
    std::string text;
    try {
      text = fn().dump();
    } catch (const std::exception& e) {
      text = nlohmann::json{{"__exception", e.what()}}.dump();
    }
    for (size_t off = 0; off < text.size();) {
      ssize_t w = write(fds[1], text.data() + off, text.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += size_t(w);
    }
    // _exit: no atexit handlers or library destructors (a driver's could hang or crash).
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  bool timed_out = false;
  int status = collect(pid, {{fds[0], &text}}, timeout_s, &timed_out);
  if (timed_out) {
    res.error = "no answer within " + std::to_string(timeout_s) + " s (killed)";
    return res;
  }
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    res.error = describe_status(status);
    return res;
  }
  try {
    res.value = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    res.error = "unreadable answer from the child";
    return res;
  }
  if (res.value.is_object() && res.value.contains("__exception")) {
    res.error = res.value["__exception"].get<std::string>();
    return res;
  }
  res.ok = true;
  return res;
}

ProgramResult run_program(const std::vector<std::string>& argv, const std::vector<EnvChange>& env, int timeout_s) {
  ProgramResult res;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    res.error = std::string("cannot create a pipe: ") + strerror(errno);
    return res;
  }
  SpawnRequest req;
  req.argv = argv;
  req.env = env;
  req.in_child = [&] {
    setpgid(0, 0);  // its own process group: a timeout kills what it started too
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
  };
  Spawned child = spawn(req);
  close(out[1]);
  close(err[1]);
  if (child.pid < 0) {
    close(out[0]);
    close(err[0]);
    res.error = child.error;
    return res;
  }
  int status = collect(child.pid, {{out[0], &res.out}, {err[0], &res.err}}, timeout_s, &res.timed_out, true);
  if (!child.running()) {
    res.error = child.error;
    return res;
  }
  res.started = true;
  if (res.timed_out) {
    res.error = "no answer within " + std::to_string(timeout_s) + " s (killed)";
    return res;
  }
  res.exit_code = exit_code_of(status);
  return res;
}

}  // namespace vt::doctor
