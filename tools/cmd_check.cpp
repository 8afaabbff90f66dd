// `vramtrace check`: a CI gate. Exit 0 when every limit holds, 1 when one is broken (each on its
// own line with actual vs allowed), 2 for usage errors, unreadable input, or a damaged or
// unreadable trace (named on stderr and in --json's `problems`) unless --allow-damaged, and for a
// limit on PyTorch's figures (--max-allocated, --max-reserved, their growth) that a trace without
// them cannot answer. The limits themselves are judged by analyzer/judge/gate.h.
#include <iostream>

#include <CLI/CLI.hpp>
#include "usage.h"
#include "analysis.h"
#include "byte_size.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"
#include "gate.h"
#include "report_render.h"

namespace vt::cli {

namespace {

// A size limit: *has set when given; false (with one error line) when it is not a size.
bool size_limit(const std::string& flag, const std::string& text, bool* has, uint64_t* value) {
  *has = !text.empty();
  std::string why;
  if (*has && !parse_bytes(text, value, &why)) {
    error_line(flag + ": " + why);
    return false;
  }
  return true;
}

}  // namespace

int check_command(const CheckOptions& opt) {
  analyzer::GateLimits lim;
  if (!size_limit("--max-peak", opt.max_peak, &lim.has_max_peak, &lim.max_peak) ||
      !size_limit("--max-leak", opt.max_leak, &lim.has_max_leak, &lim.max_leak) ||
      !size_limit("--max-allocated", opt.max_allocated, &lim.has_max_allocated, &lim.max_allocated) ||
      !size_limit("--max-reserved", opt.max_reserved, &lim.has_max_reserved, &lim.max_reserved))
    return 2;
  lim.no_oom = opt.no_oom;
  lim.max_peak_growth = opt.max_peak_growth;
  lim.max_site_growth = opt.max_site_growth;
  lim.max_allocated_growth = opt.max_allocated_growth;
  lim.max_reserved_growth = opt.max_reserved_growth;
  bool growth_limits = lim.growth();
  if (growth_limits && opt.baseline.empty()) {
    error_line("--max-peak-growth, --max-site-growth, --max-allocated-growth and --max-reserved-growth need --baseline");
    return 2;
  }
  if (!opt.baseline.empty() && !growth_limits) {
    error_line("--baseline needs a growth limit (--max-peak-growth, --max-site-growth, --max-allocated-growth, --max-reserved-growth)");
    return 2;
  }
  if (!lim.has_max_peak && !lim.has_max_leak && !lim.has_max_allocated && !lim.has_max_reserved && !opt.no_oom &&
      !growth_limits) {
    error_line("check: no limit given (--max-peak, --max-allocated, --max-reserved, --max-leak, --no-oom, --baseline with growth limits)");
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

  // A limit on PyTorch's figures that a run cannot answer is no pass: the gate cannot be judged.
  if (std::string missing = analyzer::missing_torch_figures(runs.traces, base.traces, lim); !missing.empty()) {
    error_line(missing);
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

void add_check_command(CLI::App& app, Commands& out) {
  auto check = std::make_shared<CheckOptions>();
  CLI::App* c = app.add_subcommand("check", "a CI gate: exit 1 when the peak, leaks, OOMs or growth break a limit");
  c->add_option("trace", check->input, "trace file, or a directory of traces")->required();
  c->add_option("--max-peak", check->max_peak,
                "largest allowed peak of device memory as the driver saw it (e.g. 4GiB, 512MB, 1073741824); "
                "for PyTorch: its reserved plus memory outside it")
      ->check(not_empty());
  c->add_option("--max-allocated", check->max_allocated,
                "largest allowed PyTorch peak allocated (max_memory_allocated: live tensors); exit 2 on a trace "
                "without PyTorch's block figures")
      ->check(not_empty());
  c->add_option("--max-reserved", check->max_reserved,
                "largest allowed PyTorch peak reserved (max_memory_reserved: its cached segments); exit 2 on a "
                "trace without PyTorch's block figures")
      ->check(not_empty());
  c->add_option("--max-leak", check->max_leak,
                "largest allowed memory left allocated at the end (for PyTorch: its tensors, not its caches)")
      ->check(not_empty());
  c->add_flag("--no-oom", check->no_oom, "fail on any failed allocation");
  c->add_option("--baseline", check->baseline, "trace or directory to compare with")->check(not_empty());
  c->add_option("--max-peak-growth", check->max_peak_growth, "allowed peak growth over the baseline, percent")
      ->check(finite_in(0, 1e9));
  c->add_option("--max-site-growth", check->max_site_growth, "allowed growth of any call site's peak share, percent")
      ->check(finite_in(0, 1e9));
  c->add_option("--max-allocated-growth", check->max_allocated_growth,
                "allowed growth of PyTorch's peak allocated over the baseline, percent")
      ->check(finite_in(0, 1e9));
  c->add_option("--max-reserved-growth", check->max_reserved_growth,
                "allowed growth of PyTorch's peak reserved over the baseline, percent")
      ->check(finite_in(0, 1e9));
  c->add_flag("--json", check->json, "print the result as JSON");
  c->add_flag("--allow-damaged", check->allow_damaged,
              "judge damaged traces on what could be read (else a damaged or unreadable trace fails with exit 2)");
  out.push_back({c, [check](const Invocation&) { return check_command(*check); }});
}

}  // namespace vt::cli
