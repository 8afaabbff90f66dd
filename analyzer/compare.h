// Comparing runs: call sites matched across builds and runs by their symbolized frames (function
// names and module names, not addresses or lines, which change between builds), the change of
// each site's peak contribution and leaks, and the gates `vramtrace check` enforces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

// "512MiB", "4GB", "1.5GiB", "1048576", "2 GiB": bytes. KiB/MiB/GiB/TiB (and K/M/G/T) are powers
// of 1024, KB/MB/GB/TB powers of 1000. False with a reason for anything else.
bool parse_size(const std::string& text, uint64_t* bytes, std::string* why);

// The identity of a call site across runs.
std::string site_key(const std::vector<Frame>& stack);
// A short human name for a site: its innermost meaningful frame, and `callers` more after " < ".
std::string site_label(const std::vector<Frame>& stack, int callers = 0);

struct SiteChange {
  std::string key, label;
  std::vector<Frame> stack;  // from the newer run when present
  int64_t base_peak = 0, new_peak = 0;    // bytes in the peak live set
  int64_t base_leak = 0, new_leak = 0;    // bytes live at the end
  bool added = false, vanished = false;
  int64_t change() const { return (new_peak - base_peak) + (new_leak - base_leak); }
};

struct RunDiff {
  uint64_t base_peak = 0, new_peak = 0, base_leak = 0, new_leak = 0;
  std::vector<SiteChange> sites;  // largest absolute change first
};

RunDiff diff_runs(const TraceReport& base, const TraceReport& now);

}  // namespace vt::analyzer
