// `vramtrace check`: a CI gate. Exit 0 when every limit holds, 1 when one is broken (each on its
// own line with actual vs allowed), 2 for usage errors, unreadable input, or a damaged or
// unreadable trace (named on stderr and in --json's `problems`) unless --allow-damaged, and for a
// limit on PyTorch's figures (--max-allocated, --max-reserved, their growth) that a trace without
// them cannot answer. The limits themselves are judged by analyzer/judge/gate.h.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include "usage.h"
#include "analysis.h"
#include "byte_size.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"
#include "fit.h"
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

// The gate on a prediction (`--predict-batch B1,B2[,B3] --predict-target B`): the traces are runs of
// one script at those batch sizes (analyzer/whatif/fit.h); PyTorch's limits and --no-oom are
// judged on what fit predicts at B.
int check_prediction(const CheckOptions& opt, const analyzer::GateLimits& lim) {
  if (lim.has_max_peak || lim.has_max_leak || lim.growth()) {
    error_line("check --predict-target judges --max-allocated, --max-reserved and --no-oom only (a prediction has no "
               "driver peak, leaks or baseline)");
    return 2;
  }
  analyzer::FitOptions f;
  f.traces = opt.inputs;
  f.target = opt.predict_target;
  f.symbolizer = symbol_options("", {});
  std::string err;
  if (!analyzer::parse_batch_sizes(opt.predict_batches, &f.batches)) {
    error_line("--predict-batch: each trace's batch size, in order, e.g. 8,16,32 (not '" + opt.predict_batches + "')");
    return 2;
  }
  if (f.batches.size() != f.traces.size()) {
    error_line("--predict-batch gives " + std::to_string(f.batches.size()) + " batch sizes for " +
               std::to_string(f.traces.size()) + " traces: one each");
    return 2;
  }
  analyzer::FitReport rep;
  if (!analyzer::run_fit(f, &rep, &err)) {
    error_line(err);
    return 2;
  }
  char at_batch[64];
  snprintf(at_batch, sizeof at_batch, "batch %g (predicted from %zu runs)", rep.target.batch, rep.runs.size());
  std::vector<analyzer::Violation> v;
  const analyzer::FitPrediction& p = rep.target;
  if (lim.has_max_allocated && p.peak_allocated > lim.max_allocated)
    v.push_back({"max_allocated", at_batch, std::string(at_batch) + ": PyTorch's peak allocated " + format_bytes(p.peak_allocated) +
                 " > " + format_bytes(lim.max_allocated), "pytorch_peak_allocated", double(p.peak_allocated), double(lim.max_allocated)});
  if (lim.has_max_reserved && p.peak_reserved > lim.max_reserved)
    v.push_back({"max_reserved", at_batch, std::string(at_batch) + ": PyTorch's peak reserved " + format_bytes(p.peak_reserved) +
                 " > " + format_bytes(lim.max_reserved), "pytorch_peak_reserved", double(p.peak_reserved), double(lim.max_reserved)});
  if (lim.no_oom && p.oom)
    v.push_back({"no_oom", at_batch, std::string(at_batch) + ": runs out of memory (" + format_bytes(p.oom_size) +
                 (p.oom_where.empty() ? "" : " at " + p.oom_where) + ")", "ooms", 1, 0});
  if (opt.json) std::cout << analyzer::json_text(analyzer::gate_json(v, nlohmann::json::array(), true), 2) << "\n";
  else std::cout << analyzer::gate_text(v, rep.runs.size(), 0, 0, false);
  return v.empty() ? 0 : 1;
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
  const bool predict = opt.predict_target > 0 || !opt.predict_batches.empty();
  if (predict && (opt.predict_target <= 0 || opt.predict_batches.empty())) {
    error_line("check: --predict-target and --predict-batch go together");
    return 2;
  }
  if (!predict && opt.inputs.size() != 1) {
    error_line("check: one trace or directory (several only with --predict-batch: runs at those batch sizes)");
    return 2;
  }
  if (!lim.has_max_peak && !lim.has_max_leak && !lim.has_max_allocated && !lim.has_max_reserved && !opt.no_oom &&
      !growth_limits) {
    error_line("check: no limit given (--max-peak, --max-allocated, --max-reserved, --max-leak, --no-oom, --baseline with growth limits)");
    return 2;
  }
  if (predict) return check_prediction(opt, lim);
  const std::string& input = opt.inputs[0];

  analyzer::AnalysisOptions a;
  a.top = 1000000;  // every site: gates compare all of them
  analyzer::JobReport runs, base;
  bool is_job = false;
  std::string err;
  if (!analyzer::analyze_input(input, a, &runs, &is_job, &err) ||
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
    error_line("check: no readable trace in " + (runs.traces.empty() ? input : opt.baseline));
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
  c->add_option("trace", check->inputs, "trace file, or a directory of traces (with --predict-batch: 2 or 3 traces)")
      ->required()->expected(1, 3);
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
  c->add_option("--predict-batch", check->predict_batches,
                "the traces are runs of one script at these batch sizes (8,16,32): judge what `fit` predicts at "
                "--predict-target")
      ->check(not_empty());
  c->add_option("--predict-target", check->predict_target, "the batch size whose predicted peaks are judged")
      ->check(finite_in(0.000001, 1e9));
  c->add_flag("--json", check->json, "print the result as JSON");
  c->add_flag("--allow-damaged", check->allow_damaged,
              "judge damaged traces on what could be read (else a damaged or unreadable trace fails with exit 2)");
  out.push_back({c, [check](const Invocation&) { return check_command(*check); }});
}

}  // namespace vt::cli
