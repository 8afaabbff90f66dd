// The CI gate behind `vramtrace check`: limits on the peak, leaks and failed allocations of each
// run, and on growth against a baseline (a job rank by rank: compare.h, matched_runs; growth from
// a baseline that held nothing breaks any growth limit), judged from analysed traces (analysis.h). The command
// line (tools/cmd_check.cpp) only parses flags, loads traces and prints what this returns.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

// --max-peak judges device memory as the driver saw it (for PyTorch: its reserved plus memory
// outside it); --max-allocated and --max-reserved judge PyTorch's own peaks (max_memory_allocated,
// max_memory_reserved), which only traces with PyTorch's block figures have (compare.h, torch_peaks).
struct GateLimits {
  bool has_max_peak = false, has_max_leak = false, has_max_allocated = false, has_max_reserved = false;
  uint64_t max_peak = 0, max_leak = 0, max_allocated = 0, max_reserved = 0;
  bool no_oom = false;
  double max_peak_growth = -1, max_site_growth = -1;  // percent; -1 = not set
  double max_allocated_growth = -1, max_reserved_growth = -1;  // PyTorch's peaks against the baseline's
  bool growth() const {
    return max_peak_growth >= 0 || max_site_growth >= 0 || max_allocated_growth >= 0 || max_reserved_growth >= 0;
  }
};

struct Violation {
  std::string rule, trace, message;
  // What was measured (docs/report-schema.md, "vramtrace check --json"): driver_peak,
  // pytorch_peak_allocated, pytorch_peak_reserved, leaks, ooms, site_peak.
  std::string figure;
  double actual = 0, allowed = 0;  // actual is infinite for a new site (no baseline share)
};

// A limit on PyTorch's figures cannot be judged on a run without them: the error line (for exit
// 2) naming the first such run of `runs` (or, for the growth limits, of `base`) and why; "" when
// every run has them or no such limit is set.
std::string missing_torch_figures(const std::vector<TraceReport>& runs, const std::vector<TraceReport>& base,
                                  const GateLimits& limits);

// Every broken limit, in trace order. `base` empty: no growth limits are judged. Unreadable
// traces (TraceReport::unreadable) are skipped: the caller decides what damage means.
std::vector<Violation> judge_gate(const std::vector<TraceReport>& runs, const std::vector<TraceReport>& base,
                                  const GateLimits& limits);

// `check` output: one FAIL line per violation, or the ok line ("N traces", and how many were
// damaged or unreadable when --allow-damaged let them through). JSON: {"ok", "violations",
// "problems"} with `problems` as in reports (report_render.h, problems_json); `ok` is false when
// a limit broke or damage failed the gate (`damage_ok` false).
// `damage_fails`: damage broke the gate (no --allow-damaged): a "FAIL damaged" line instead of ok.
std::string gate_text(const std::vector<Violation>& v, size_t traces, size_t damaged, size_t unreadable, bool damage_fails);
nlohmann::json gate_json(const std::vector<Violation>& v, const nlohmann::json& problems, bool damage_ok);

}  // namespace vt::analyzer
