// Comparing runs: call sites matched across builds and runs by their symbolized frames (function
// names and module names, not addresses or lines, which change between builds), the change of
// each site's peak contribution and leaks, and the gates `vramtrace check` enforces.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

// The identity of a call site across runs.
std::string site_key(const std::vector<Frame>& stack, bool native = false);
// A short human name for a site: its innermost meaningful frame, and `callers` more after " < ".
std::string site_label(const std::vector<Frame>& stack, int callers = 0, bool native = false);

// Byte counts are unsigned and saturate: a crafted trace can claim 2^64 - 1 bytes. Changes are
// signed, clamped to [-INT64_MAX, INT64_MAX] (so their magnitude always fits).
uint64_t add_bytes(uint64_t a, uint64_t b);
int64_t byte_change(uint64_t from, uint64_t to);
int64_t add_changes(int64_t a, int64_t b);
uint64_t magnitude(int64_t change);

struct SiteChange {
  std::string key, label;
  std::vector<Frame> stack;  // from the newer run when present
  uint64_t base_peak = 0, new_peak = 0;    // bytes in the peak live set
  uint64_t base_leak = 0, new_leak = 0;    // bytes live at the end
  bool added = false, vanished = false;
  int64_t peak_change() const { return byte_change(base_peak, new_peak); }
  int64_t leak_change() const { return byte_change(base_leak, new_leak); }
  int64_t change() const { return add_changes(peak_change(), leak_change()); }
};

// PyTorch's own peaks of a run (max_memory_allocated / max_memory_reserved), from its block
// records: the highest device's of each, like the driver peak takes the highest device's. Known
// only when the block layer gave figures (torch.layer "on"); else `missing` says why, in words.
struct TorchPeaks {
  bool known = false;
  uint64_t allocated = 0, reserved = 0;
  int allocated_device = -1, reserved_device = -1;
  std::string missing;
};
TorchPeaks torch_peaks(const TraceReport& r);

struct RunDiff {
  uint64_t base_peak = 0, new_peak = 0, base_leak = 0, new_leak = 0;
  // PyTorch's peaks, compared only when both runs have block figures (`torch`).
  bool torch = false;
  uint64_t base_allocated = 0, new_allocated = 0, base_reserved = 0, new_reserved = 0;
  std::vector<SiteChange> sites;  // largest absolute change first
};

RunDiff diff_runs(const TraceReport& base, const TraceReport& now, bool native = false);

// The runs of two inputs (a trace, or a job's traces) to compare, pair by pair (base, new): by
// rank when every readable run of both sides has a rank and no rank is there twice (a rank only
// one side has is left out); else the run with the highest peak of each side. `by_rank` tells
// which it was.
struct RunPair {
  const TraceReport* base;
  const TraceReport* now;
};
std::vector<RunPair> matched_runs(const std::vector<TraceReport>& base, const std::vector<TraceReport>& now,
                                  bool* by_rank = nullptr);

// `vramtrace diff` output: JSON (schema vramtrace.diff/1, docs/report-schema.md; at most `top`
// sites, `sites_left_out` counts the rest) and text (at most `top` changed sites, strings escaped
// for a terminal).
nlohmann::json diff_json(const RunDiff& d, const std::string& base_path, const std::string& new_path,
                         size_t top = SIZE_MAX);
std::string diff_text(const RunDiff& d, size_t top = 30);
// "+1.00 GiB", "-512 MiB", "+0 B".
std::string signed_bytes(int64_t change);

}  // namespace vt::analyzer
