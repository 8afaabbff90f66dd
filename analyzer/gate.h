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

struct GateLimits {
  bool has_max_peak = false, has_max_leak = false;
  uint64_t max_peak = 0, max_leak = 0;
  bool no_oom = false;
  double max_peak_growth = -1, max_site_growth = -1;  // percent; -1 = not set
};

struct Violation {
  std::string rule, trace, message;
  double actual = 0, allowed = 0;  // actual is infinite for a new site (no baseline share)
};

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
