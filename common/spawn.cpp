// See spawn.h.
#include "spawn.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vt {

Spawned spawn(const SpawnRequest& req) {
  Spawned s;
  if (req.argv.empty()) {
    s.error = "no program to run";
    return s;
  }
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    s.error = std::string("cannot create a pipe: ") + strerror(errno);
    return s;
  }
  std::vector<char*> args;
  for (const std::string& a : req.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = fork();
  if (pid < 0) {
    s.error = std::string("cannot fork: ") + strerror(errno);
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return s;
  }
  if (pid == 0) {
    close(exec_pipe[0]);
    if (req.in_child) req.in_child();
    for (const EnvChange& e : req.env) {
      if (e.value)
        setenv(e.name.c_str(), e.value->c_str(), 1);
      else
        unsetenv(e.name.c_str());
    }
    execvp(args[0], args.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);  // close-on-exec: read only when exec failed
    _exit(e == ENOENT ? 127 : 126);
  }
  close(exec_pipe[1]);
  s.pid = pid;
  if (req.forked) req.forked(pid);
  int e = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == ssize_t(sizeof e)) {
    s.exec_errno = e ? e : EINVAL;
    s.error = "cannot run " + req.argv[0] + ": " + strerror(s.exec_errno);
  }
  return s;
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int wait_exit_code(pid_t pid, int* signal) {
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (signal) *signal = r == pid && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r == pid ? exit_code_of(status) : -1;
}

}  // namespace vt
