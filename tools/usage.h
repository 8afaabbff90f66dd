// How the command line presents itself: the version line, the usage formatter (a command that
// runs another shows `-- CMD ARGS...`), and the nearest subcommand to a mistyped one. The exit
// status convention every subcommand follows is written down here and in README.md:
//   0 ok, 1 a check or gate failed (check, doctor), 2 usage error or unreadable input;
//   `run` returns the traced command's own status (128+N when signal N ended it).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace vt::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // a limit broken, a problem found
inline constexpr int kExitUsage = 2;   // bad arguments, unreadable or unwritable files

// "vramtrace 0.1.0 (trace format 1.0)"
std::string version_line();

// CLI11's formatter, with the program named `vramtrace` whatever path ran it, and a
// prefix-command subcommand's usage ending in `-- CMD ARGS...`.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override;
};

// The name in `names` nearest to `typed` (edit distance, transpositions counted once), or ""
// when none is close enough to be what was meant.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& names);

// Option checks the commands share. A finite number in [lo, hi] (CLI11's own range checks let
// "nan" through, and "1e300" overflows the conversions after them).
CLI::Validator finite_in(double lo, double hi);
// A count: digits only ("-1" would wrap around to 2^64 - 1).
CLI::Validator count_check();
// Not empty: `--max-peak "$LIMIT"` with LIMIT unset must not turn a gate off.
CLI::Validator not_empty();

}  // namespace vt::cli
