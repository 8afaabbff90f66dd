// Running things the doctor must survive: a library's code (a driver that crashes or hangs in
// cuInit, a mismatched NVML) runs in a forked child whose JSON answer comes back through a pipe;
// other programs (Python, nvcc, the tracing self-test) run with a timeout and captured output
// (started by common/spawn.h).
// The doctor itself stays single-threaded and never loads a CUDA library, which is what makes
// forking without exec safe here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spawn.h"

namespace vt::doctor {

struct Isolated {
  bool ok = false;    // the child answered
  std::string error;  // why not: "killed by signal 11", "no answer within 30 s", ...
  nlohmann::json value;
};
// Runs fn in a forked child (stdout and stderr go to /dev/null there) and returns its value.
Isolated run_isolated(const std::function<nlohmann::json()>& fn, int timeout_s);

using vt::EnvChange;

struct ProgramResult {
  bool started = false;  // exec succeeded
  std::string error;     // why it did not start, or "no answer within N s"
  bool timed_out = false;
  int exit_code = -1;    // 128+N when killed by signal N
  std::string out, err;  // at most 1 MiB each
};
ProgramResult run_program(const std::vector<std::string>& argv, const std::vector<EnvChange>& env, int timeout_s);

}  // namespace vt::doctor
