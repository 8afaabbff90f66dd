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

int dump_command(const std::string& trace, bool with_meta);
int info_command(const std::string& trace);

// "vramtrace: <msg>" on stderr.
void error_line(const std::string& msg);

}  // namespace vt::cli
