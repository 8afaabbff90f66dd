// `vramtrace diff BASE NEW [--format text|json] [--top N] [-o FILE] [--native]`: what changed
// between two runs, per call site (sites as the user's frames show them unless --native). Two jobs
// are compared rank with rank (analyzer/judge/compare.h, matched_runs): the rank with the highest peak
// now is shown, and named.
#include <iostream>

#include <CLI/CLI.hpp>
#include "analysis.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"
#include "usage.h"

namespace vt::cli {

namespace {

// Every run of a trace or a directory; damage is named on stderr.
bool load_runs(const std::string& input, analyzer::JobReport* job, std::string* err) {
  analyzer::AnalysisOptions a;
  a.top = 1000000;
  a.symbols = symbol_options("", {});
  bool is_job = false;
  if (!analyzer::analyze_input(input, a, job, &is_job, err)) return false;
  name_damage(*job);
  if (job->traces.empty()) {
    *err = input + ": no readable trace";
    return false;
  }
  return true;
}

uint64_t peak_of(const analyzer::TraceReport& r) { return r.peaks.empty() ? 0 : r.peaks[0].bytes; }

}  // namespace

int diff_command(const DiffOptions& opt) {
  if (opt.format != "text" && opt.format != "json") {
    error_line("--format must be text or json, not '" + opt.format + "'");
    return kExitUsage;
  }
  analyzer::JobReport base, now;
  std::string err;
  if (!load_runs(opt.base, &base, &err) || !load_runs(opt.now, &now, &err)) {
    error_line(err);
    return kExitUsage;
  }
  // Jobs are compared rank with rank; shown is the rank whose new peak is the highest.
  bool ranked = false;
  std::vector<analyzer::RunPair> pairs = analyzer::matched_runs(base.traces, now.traces, &ranked);
  if (pairs.empty()) {
    error_line("diff: no run of " + opt.now + " to compare with one of " + opt.base);
    return kExitUsage;
  }
  const analyzer::RunPair* p = &pairs[0];
  for (const analyzer::RunPair& q : pairs)
    if (peak_of(*q.now) > peak_of(*p->now)) p = &q;
  analyzer::RunDiff d = analyzer::diff_runs(*p->base, *p->now, opt.native);
  std::string text;
  if (opt.format == "json") {
    nlohmann::json j = analyzer::diff_json(d, p->base->path, p->now->path, opt.top ? opt.top : SIZE_MAX);
    if (ranked) j["rank"] = p->now->process.rank;
    text = analyzer::json_text(j, 2) + "\n";
  } else {
    if (ranked || base.traces.size() > 1 || now.traces.size() > 1)
      text = "comparing " + (ranked ? "rank " + std::to_string(p->now->process.rank) + ", " : std::string()) +
             analyzer::terminal_escape(p->base->path) + " -> " + analyzer::terminal_escape(p->now->path) + " (" +
             (ranked ? "of " + std::to_string(pairs.size()) + " ranks in both, the one with the highest peak now"
                     : std::string("the highest peak of each side")) +
             ")\n";
    text += analyzer::diff_text(d, opt.top ? opt.top : 30);
  }
  return write_out({text}, opt.output.empty() ? "-" : opt.output, {opt.base, opt.now});
}

void add_diff_command(CLI::App& app, Commands& out) {
  auto diff = std::make_shared<DiffOptions>();
  CLI::App* c = app.add_subcommand("diff", "what changed between two runs, per call site");
  c->add_option("base", diff->base, "baseline trace or directory")->required();
  c->add_option("new", diff->now, "new trace or directory")->required();
  c->add_option("--format", diff->format, "text or json")->capture_default_str();
  c->add_option("--top", diff->top, "call sites listed (default: text 30, JSON all)")->check(CLI::Range(1, 100000));
  c->add_option("-o,--output", diff->output, "write to this file instead of stdout");
  c->add_flag("--native", diff->native, "tell sites apart by every frame (default: by the frames the report shows)");
  out.push_back({c, [diff](const Invocation&) { return diff_command(*diff); }});
}

}  // namespace vt::cli
