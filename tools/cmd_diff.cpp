// `vramtrace diff BASE NEW [--format text|json] [--top N] [-o FILE] [--native]`: what changed
// between two runs, per call site (sites as the user's frames show them unless --native).
#include <iostream>

#include "analysis.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"
#include "usage.h"

namespace vt::cli {

namespace {

// The run with the highest peak of a trace or a directory; damage is named on stderr.
bool load_largest(const std::string& input, analyzer::TraceReport* out, std::string* err) {
  analyzer::AnalysisOptions a;
  a.top = 1000000;
  a.symbols = symbol_options("", {});
  analyzer::JobReport job;
  bool is_job = false;
  if (!analyzer::analyze_input(input, a, &job, &is_job, err)) return false;
  name_damage(job);
  if (job.traces.empty()) {
    *err = input + ": no readable trace";
    return false;
  }
  size_t best = 0;
  for (size_t i = 1; i < job.traces.size(); ++i)
    if (!job.traces[i].peaks.empty() && (job.traces[best].peaks.empty() || job.traces[i].peaks[0].bytes > job.traces[best].peaks[0].bytes))
      best = i;
  *out = std::move(job.traces[best]);
  return true;
}

}  // namespace

int diff_command(const DiffOptions& opt) {
  if (opt.format != "text" && opt.format != "json") {
    error_line("--format must be text or json, not '" + opt.format + "'");
    return kExitUsage;
  }
  analyzer::TraceReport base, now;
  std::string err;
  if (!load_largest(opt.base, &base, &err) || !load_largest(opt.now, &now, &err)) {
    error_line(err);
    return kExitUsage;
  }
  analyzer::RunDiff d = analyzer::diff_runs(base, now, opt.native);
  std::string text = opt.format == "json" ? analyzer::json_text(analyzer::diff_json(d, opt.base, opt.now, opt.top ? opt.top : SIZE_MAX), 2) + "\n"
                                          : analyzer::diff_text(d, opt.top ? opt.top : 30);
  return write_out(text, opt.output.empty() ? "-" : opt.output, {opt.base, opt.now});
}

}  // namespace vt::cli
