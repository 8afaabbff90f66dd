// `vramtrace check`: a CI gate. Exit 0 when every limit holds, 1 when one is broken (each on its
// own line with actual vs allowed), 2 for usage errors, unreadable input, or a damaged or
// unreadable trace (named on stderr and in --json's `problems`) unless --allow-damaged. The
// limits themselves are judged by analyzer/gate.h.
#include <iostream>

#include "analysis.h"
#include "byte_size.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"
#include "gate.h"
#include "report_render.h"

namespace vt::cli {

int check_command(const CheckOptions& opt) {
  analyzer::GateLimits lim;
  std::string why;
  lim.has_max_peak = !opt.max_peak.empty();
  lim.has_max_leak = !opt.max_leak.empty();
  if (lim.has_max_peak && !parse_bytes(opt.max_peak, &lim.max_peak, &why)) {
    error_line("--max-peak: " + why);
    return 2;
  }
  if (lim.has_max_leak && !parse_bytes(opt.max_leak, &lim.max_leak, &why)) {
    error_line("--max-leak: " + why);
    return 2;
  }
  lim.no_oom = opt.no_oom;
  lim.max_peak_growth = opt.max_peak_growth;
  lim.max_site_growth = opt.max_site_growth;
  bool growth_limits = opt.max_peak_growth >= 0 || opt.max_site_growth >= 0;
  if (growth_limits && opt.baseline.empty()) {
    error_line("--max-peak-growth and --max-site-growth need --baseline");
    return 2;
  }
  if (!opt.baseline.empty() && !growth_limits) {
    error_line("--baseline needs --max-peak-growth or --max-site-growth");
    return 2;
  }
  if (!lim.has_max_peak && !lim.has_max_leak && !opt.no_oom && !growth_limits) {
    error_line("check: no limit given (--max-peak, --max-leak, --no-oom, --baseline with growth limits)");
    return 2;
  }

  analyzer::AnalysisOptions a;
  a.top = 1000000;  // every site: gates compare all of them
  analyzer::JobReport runs, base;
  bool is_job = false;
  std::string err;
  if (!analyzer::analyze_input(opt.input, a, &runs, &is_job, &err) ||
      (!opt.baseline.empty() && !analyzer::analyze_input(opt.baseline, a, &base, &is_job, &err))) {
    error_line(err);
    return 2;
  }
  // Damage first: a gate passed on half a trace is no gate.
  std::vector<analyzer::TraceProblem> problems = analyzer::job_problems(runs);
  for (const analyzer::TraceProblem& p : analyzer::job_problems(base)) problems.push_back(p);
  for (const analyzer::TraceProblem& p : problems) error_line(analyzer::problem_line(p));
  size_t damaged = 0, unreadable = runs.unreadable.size() + base.unreadable.size();
  for (const analyzer::TraceReport& t : runs.traces) damaged += t.damaged();
  for (const analyzer::TraceReport& t : base.traces) damaged += t.damaged();
  bool damage_fails = !problems.empty() && !opt.allow_damaged;
  if (runs.traces.empty() || (!opt.baseline.empty() && base.traces.empty())) {
    error_line("check: no readable trace in " + (runs.traces.empty() ? opt.input : opt.baseline));
    return 2;
  }

  std::vector<analyzer::Violation> v = analyzer::judge_gate(runs.traces, base.traces, lim);
  if (opt.json) {
    nlohmann::json out = analyzer::gate_json(v, analyzer::problems_json(problems), !damage_fails);
    std::cout << analyzer::json_text(out, 2) << "\n";
  } else {
    std::cout << analyzer::gate_text(v, runs.traces.size(), damaged, unreadable, damage_fails);
  }
  if (damage_fails) return 2;
  return v.empty() ? 0 : 1;
}

}  // namespace vt::cli
