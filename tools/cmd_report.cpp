// `vramtrace report TRACE|DIR [--format text|json|html] [--top N] [-o FILE] [-j N]` and the
// one-section forms `peak`, `leaks`, `oom`, `frag` (html is always the whole report). A directory is
// analysed as one job (all its traces, -j at once), or, without traces, from per-rank JSON
// summaries (docs/scale.md). `vramtrace export --folded OUT TRACE [--leaks]`.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "analysis.h"
#include "terminal_escape.h"
#include "commands.h"
#include "folded.h"
#include "job_parallel.h"
#include "report_html.h"
#include "report_render.h"

namespace vt::cli {

namespace {
// `text` to stdout ("-") or to the file `path`; exit status 1 with one line when it cannot be written.
int write_out(const std::string& text, const std::string& path) {
  if (path == "-") {
    std::cout << text;
    return 0;
  }
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) {
    error_line("cannot write " + path + ": " + strerror(errno));
    return 1;
  }
  return 0;
}
}  // namespace

int report_command(const ReportOptions& opt) {
  if (opt.format != "text" && opt.format != "json" && opt.format != "html") {
    error_line("--format must be text or json or html, not '" + opt.format + "'");
    return 2;
  }
  analyzer::AnalysisOptions a;
  a.top = opt.top;
  a.symbols = {opt.sysroot, opt.debug_dirs};
  a.progress = true;
  a.jobs = opt.jobs ? opt.jobs : analyzer::online_cpus();
  a.accept_summaries = true;
  analyzer::JobReport job;
  bool is_job = false;
  std::string err, text;
  if (!analyzer::analyze_input(opt.input, a, &job, &is_job, &err)) {
    error_line(err);
    return 1;
  }
  if (!job.summaries.empty() && opt.format == "html") {
    error_line(opt.input + ": html needs the traces (the page draws each rank's timeline); a directory of summaries gives text or json");
    return 2;
  }
  name_damage(job);
  auto json_text = [](const nlohmann::json& j) { return analyzer::json_text(j, 2) + "\n"; };
  if (is_job) {
    text = opt.format == "json" ? json_text(analyzer::job_json(job, opt.section))
           : opt.format == "html" ? analyzer::job_html(job)
                                  : analyzer::job_text(job, opt.section, opt.native);
  } else {
    const analyzer::TraceReport& rep = job.traces[0];
    text = opt.format == "json" ? json_text(analyzer::report_json(rep, opt.section))
           : opt.format == "html" ? analyzer::report_html(rep)
                                  : analyzer::report_text(rep, opt.section, opt.native);
  }
  return write_out(text, opt.output.empty() ? "-" : opt.output);
}

int export_command(const ExportOptions& opt) {
  analyzer::AnalysisOptions a;
  a.top = opt.top;
  a.symbols = {opt.sysroot, opt.debug_dirs};
  a.progress = true;
  analyzer::JobReport job;
  job.traces.resize(1);
  analyzer::TraceReport& rep = job.traces[0];
  std::string err;
  if (!analyzer::analyze_trace(opt.input, a, &rep, &err)) {
    error_line(err);
    return 1;
  }
  name_damage(job);
  return write_out(opt.leaks ? analyzer::folded_leaks(rep, opt.native) : analyzer::folded_peak(rep, opt.native), opt.output);
}

}  // namespace vt::cli
