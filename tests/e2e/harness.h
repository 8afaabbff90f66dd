// Running test programs under libvramtrace.so and the simulated driver, and reading their traces.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace_reader.h"

namespace e2e {

struct Spec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing) ours
  bool preload = true;
  bool drop_privileges = false;  // run as nobody (so a 0500 directory is really read-only)
  long fsize_limit = -1;         // RLIMIT_FSIZE in bytes
  int timeout_s = 120;
  std::string cwd = {};          // working directory (default: the test's)
  // stderr: a file (read back into Result::err), a pipe whose reader is already gone, or closed.
  enum class Stderr { File, BrokenPipe, Closed } stderr_to = Stderr::File;
};

struct Result {
  int exit_code = -1;  // 128+N when killed by signal N
  int signal = 0;      // N when killed by signal N
  bool timed_out = false;
  std::string out, err;
};

Result run(const Spec& spec);

std::string program(const std::string& name);  // a test program's path
std::string cli();                              // the vramtrace binary ($VRAMTRACE_TEST_CLI overrides)
Result run_cli(std::vector<std::string> args);  // vramtrace ARGS (not preloaded, 30 s at most)
std::string temp_dir();                         // a fresh directory (world-writable)
std::vector<std::string> files_in(const std::string& dir);
std::vector<std::string> lines(const std::string& text);

struct Trace {
  vt::analyzer::ProcessInfo info;
  std::vector<vt::analyzer::Record> events;       // memory events
  std::vector<vt::analyzer::Record> code_events;  // context, code and pool-location ops (kinds code, pool_config)
  std::map<uint8_t, size_t> metadata;               // metadata records by tag
  std::vector<std::string> problems;
  bool data_lost = false;
  std::vector<std::string> ops() const;
};
Trace load(const std::string& path);  // fails the test if it cannot be opened

}  // namespace e2e
