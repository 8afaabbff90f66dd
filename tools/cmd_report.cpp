// `vramtrace report TRACE|DIR [--format text|json|html] [--top N] [-o FILE]` and the one-section
// forms `peak`, `leaks`, `oom`, `frag` (html is always the whole report). A directory is
// analysed as one job (all its traces). `vramtrace export --folded OUT TRACE [--leaks]`.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "analysis.h"
#include "commands.h"
#include "folded.h"
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
  struct stat st;
  if (stat(opt.input.c_str(), &st) != 0) {
    error_line(opt.input + ": " + strerror(errno));
    return 1;
  }
  std::string err, text;
  bool is_dir = S_ISDIR(st.st_mode);
  if (is_dir) {
    analyzer::JobReport job;
    if (!analyzer::analyze_job(opt.input, a, &job, &err)) {
      error_line(err);
      return 1;
    }
    text = opt.format == "json" ? analyzer::job_json(job, opt.section).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
           : opt.format == "html" ? analyzer::job_html(job)
                                  : analyzer::job_text(job, opt.section);
  } else {
    analyzer::TraceReport rep;
    if (!analyzer::analyze_trace(opt.input, a, &rep, &err)) {
      error_line(err);
      return 1;
    }
    text = opt.format == "json" ? analyzer::report_json(rep, opt.section).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
           : opt.format == "html" ? analyzer::report_html(rep)
                                  : analyzer::report_text(rep, opt.section);
  }
  return write_out(text, opt.output.empty() ? "-" : opt.output);
}

int export_command(const ExportOptions& opt) {
  analyzer::AnalysisOptions a;
  a.top = opt.top;
  a.symbols = {opt.sysroot, opt.debug_dirs};
  a.progress = true;
  analyzer::TraceReport rep;
  std::string err;
  if (!analyzer::analyze_trace(opt.input, a, &rep, &err)) {
    error_line(err);
    return 1;
  }
  return write_out(opt.leaks ? analyzer::folded_leaks(rep) : analyzer::folded_peak(rep), opt.output);
}

}  // namespace vt::cli
