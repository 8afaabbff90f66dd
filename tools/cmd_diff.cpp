// `vramtrace diff BASE NEW [--format text|json] [--native]`: what changed between two runs, per call
// site (sites as the user's frames show them unless --native).
#include <iostream>

#include "analysis.h"
#include "terminal_escape.h"
#include "commands.h"
#include "compare.h"

namespace vt::cli {

namespace {

// The run with the highest peak of a trace or a directory; damage is named on stderr.
bool load_largest(const std::string& input, analyzer::TraceReport* out, std::string* err) {
  analyzer::AnalysisOptions a;
  a.top = 1000000;
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

int diff_command(const std::string& base_path, const std::string& new_path, const std::string& format, bool native) {
  if (format != "text" && format != "json") {
    error_line("--format must be text or json, not '" + format + "'");
    return 2;
  }
  analyzer::TraceReport base, now;
  std::string err;
  if (!load_largest(base_path, &base, &err) || !load_largest(new_path, &now, &err)) {
    error_line(err);
    return 1;
  }
  analyzer::RunDiff d = analyzer::diff_runs(base, now, native);
  if (format == "json")
    std::cout << analyzer::json_text(analyzer::diff_json(d, base_path, new_path), 2) << "\n";
  else
    std::cout << analyzer::diff_text(d);
  return 0;
}

}  // namespace vt::cli
