// The subcommands of `vramtrace`. Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace vt::cli {

struct RunOptions {
  std::string output;  // file, pattern or directory; empty = current directory
  std::vector<std::string> command;
};
int run_command(const RunOptions& opt);

struct DumpOptions {
  bool with_meta = false;
  bool stacks = true;
  std::string sysroot;
  std::vector<std::string> debug_dirs;
};
int dump_command(const std::string& trace, const DumpOptions& opt);
int info_command(const std::string& trace);

// "vramtrace: <msg>" on stderr.
void error_line(const std::string& msg);

}  // namespace vt::cli
