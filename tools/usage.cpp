// See usage.h.
#include "usage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "trace_format.h"

namespace vt::cli {

std::string version_line() {
  return std::string("vramtrace ") + VT_VERSION + " (trace format " + std::to_string(format::kVersionMajor) + "." +
         std::to_string(format::kVersionMinor) + ")";
}

std::string UsageFormatter::make_usage(const CLI::App* app, std::string name) const {
  std::string usage = CLI::Formatter::make_usage(app, name);
  if (app->get_prefix_command() && !usage.empty() && usage.back() == '\n') {
    usage.pop_back();
    usage += " [--] CMD ARGS...\n";
  }
  return usage;
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
// transpositions ("reprot" -> "report") each cost 1.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string nearest_name(const std::string& typed, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const std::string& n : names) {
    // A prefix ("rep", "dum") is what was meant more often than an equally distant name.
    size_t d = (typed.size() >= 2 && n.compare(0, typed.size(), typed) == 0) ? 0 : edit_distance(typed, n);
    if (d < best_d) best_d = d, best = n;
  }
  // At most a third of the letters wrong (one in a short name): beyond that it is a guess.
  size_t allowed = std::max<size_t>(1, typed.size() / 3);
  return best_d <= allowed ? best : "";
}

CLI::Validator finite_in(double lo, double hi) {
  char range[96];
  snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
  std::string want = range;
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        char* end = nullptr;
        double v = strtod(s.c_str(), &end);
        if (s.empty() || !end || *end || !std::isfinite(v) || v < lo || v > hi) return "'" + s + "' is not " + want;
        return "";
      },
      "NUMBER");
}

CLI::Validator count_check() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
          return "'" + s + "' is not a whole number (0 to 10^19)";
        return "";
      },
      "INTEGER");
}

CLI::Validator not_empty() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "an empty value (an unset variable?)" : ""; },
                        "");
}

}  // namespace vt::cli
