// Starting a program and learning whether it started: fork, changes made in the child (its
// environment, descriptors, signal dispositions), exec, and the exec's errno sent back through a
// close-on-exec pipe, so "cannot run X: No such file or directory" is told apart from X running
// and exiting 127. Used by `vramtrace run` and by the doctor's checks (doctor/isolate.cpp). For
// single-threaded callers: the child runs `in_child` between fork and exec.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vt {

struct EnvChange {
  std::string name;
  std::optional<std::string> value;  // nullopt: unset
};

struct SpawnRequest {
  std::vector<std::string> argv;        // argv[0] is looked up on PATH (execvp)
  std::vector<EnvChange> env;           // applied in the child
  std::function<void()> in_child;       // runs in the child before the environment changes
  std::function<void(pid_t)> forked;    // runs in the parent right after fork (to forward signals)
};

struct Spawned {
  pid_t pid = -1;       // > 0 once forked (the child is to be waited for, even when exec failed)
  int exec_errno = 0;   // the exec's errno when it failed (the child then exits 127 or 126)
  std::string error;    // fork or pipe failure (pid -1), or why the exec failed, one sentence
  bool running() const { return pid > 0 && exec_errno == 0; }
};

// Returns once the program runs or its exec has failed.
Spawned spawn(const SpawnRequest& req);

// waitpid (retried on EINTR): the exit status, or 128 + N when signal N ended it; -1 on error.
// `signal` (may be null) gets N when a signal ended it, else 0.
int wait_exit_code(pid_t pid, int* signal = nullptr);
// The same from a waitpid status word.
int exit_code_of(int status);

}  // namespace vt
