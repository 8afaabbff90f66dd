// `vramtrace doctor [--json] [--python PATH]`: inspects the machine (driver, toolkits, the
// runtimes a Python's frameworks would load, CUPTI, NVML, GPUs and their processes, whether
// vramtrace can trace here, memory-related environment variables) and prints a checklist.
// Exit status: 1 when any check is a problem, else 0. docs/doctor.md describes the output.
#pragma once

#include <string>

#include "report.h"

namespace vt::doctor {

struct Options {
  bool json = false;
  std::string python;  // interpreter whose frameworks to inspect; empty = python3 on PATH
};

// Runs every check. Never throws and never loads a CUDA library into this process.
Report examine(const Options& opt);

// The tracing self-test runs the current executable again with this first argument, under
// LD_PRELOAD=libvramtrace.so; main() must hand such a run to selftest_child_main before parsing
// its own arguments. argv: <exe> __doctor-selftest <libcuda to dlopen>.
inline constexpr char kSelfTestArg[] = "__doctor-selftest";
int selftest_child_main(int argc, char** argv);

}  // namespace vt::doctor

namespace vt::cli {

// Prints the report (text or JSON) on stdout and returns the exit status.
int doctor_command(const vt::doctor::Options& opt);

}  // namespace vt::cli
