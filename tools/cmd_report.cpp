// `vramtrace report TRACE|DIR [--format text|json|html] [--top N] [-o FILE] [-j N]` and the
// one-section forms `peak`, `leaks`, `oom`, `frag` (html is always the whole report). A directory is
// analysed as one job (all its traces, -j at once), or, without traces, from per-rank JSON
// summaries (docs/scale.md). HTML without -o goes to vramtrace-report.html when stdout is a
// terminal (75 KB of markup helps nobody there), to stdout when it is redirected. `--at T` adds
// the live set at T (or at a region mark, `--at mark:NAME`), with PyTorch's blocks then. `vramtrace summary` is the one-screen form.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <tuple>

#include "analysis.h"
#include "terminal_escape.h"
#include "commands.h"
#include "job_json_text.h"
#include "job_parallel.h"
#include "output_file.h"
#include "report_html.h"
#include "report_render.h"
#include "usage.h"

namespace vt::cli {

int write_out(const std::vector<std::string_view>& text, const std::string& path,
              const std::vector<std::string>& inputs, bool follow_symlink) {
  std::string err;
  if (!analyzer::write_output(text, path, inputs, &err, follow_symlink)) {
    error_line(err);
    return kExitUsage;
  }
  return kExitOk;
}

namespace {
constexpr const char* kDefaultHtml = "vramtrace-report.html";
}  // namespace

bool parse_time(const std::string& text, int64_t* ns, std::string* why) {
  // Digits with at most one point, then a unit (none: seconds). No sign, exponent, hex or inf.
  size_t i = 0, digits = 0, points = 0;
  while (i < text.size() && (isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    (text[i] == '.' ? points : digits) += 1, ++i;
  std::string unit = text.substr(i);
  while (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  static const std::pair<const char*, double> kUnits[] = {{"", 1e9}, {"s", 1e9},  {"ms", 1e6},   {"us", 1e3},
                                                          {"ns", 1}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
  const auto* u = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& x) { return unit == x.first; });
  double v = digits && points <= 1 ? strtod(text.substr(0, i).c_str(), nullptr) : -1;
  if (v < 0 || u == std::end(kUnits) || v * u->second > 9.2e18) {
    *why = "'" + text + "' is not a time since the start (examples: 12.5s, 250ms, 900us, 2m)";
    return false;
  }
  *ns = int64_t(v * u->second + 0.5);
  return true;
}

int report_command(const ReportOptions& opt) {
  if (opt.format != "text" && opt.format != "json" && opt.format != "html") {
    error_line("--format must be text, json or html, not '" + opt.format + "'");
    return kExitUsage;
  }
  analyzer::AnalysisOptions a;
  a.top = opt.top;
  a.symbols = symbol_options(opt.sysroot, opt.debug_dirs);
  a.progress = true;
  a.jobs = opt.jobs ? opt.jobs : analyzer::online_cpus();
  a.accept_summaries = true;
  // A job's JSON: each trace's part is written by the job's workers (job_json_text.h).
  if (opt.format == "json")
    a.render = [sections = opt.sections](const analyzer::TraceReport& t) { return analyzer::job_json_part(t, sections); };
  std::string err;
  if (opt.at.rfind("mark:", 0) == 0) {
    a.at_mark = opt.at.substr(5);
    if (a.at_mark.empty()) {
      error_line("--at: 'mark:' needs a region name (mark:NAME, as given to vramtrace_region_begin)");
      return kExitUsage;
    }
  } else if (!opt.at.empty() && !parse_time(opt.at, &a.at_ns, &err)) {
    error_line("--at: " + err + ", or mark:NAME");
    return kExitUsage;
  }
  analyzer::JobReport job;
  bool is_job = false;
  if (!analyzer::analyze_input(opt.input, a, &job, &is_job, &err)) {
    error_line(err);
    return kExitUsage;
  }
  if (!job.summaries.empty() && opt.format == "html") {
    error_line(opt.input + ": html needs the traces (the page draws each rank's timeline); a directory of summaries gives text or json");
    return kExitUsage;
  }
  name_damage(job);
  if (is_job && job.traces.empty()) {  // every file unreadable (each named above): nothing to report
    error_line(opt.input + ": no readable trace");
    return kExitUsage;
  }
  auto json_text = [](const nlohmann::json& j) { return analyzer::json_text(j, 2) + "\n"; };
  std::vector<std::string> pieces;  // the output, written one after another
  if (is_job && opt.format == "json") {
    pieces = analyzer::job_json_text(job, opt.sections, opt.jobs ? opt.jobs : analyzer::online_cpus());
    pieces.push_back("\n");
  } else if (is_job) {
    pieces = {opt.format == "html" ? analyzer::job_html(job) : analyzer::job_text(job, opt.sections, opt.native)};
  } else {
    const analyzer::TraceReport& rep = job.traces[0];
    pieces = {opt.format == "json" ? json_text(analyzer::report_json(rep, opt.sections))
              : opt.format == "html" ? analyzer::report_html(rep)
                                     : analyzer::report_text(rep, opt.sections, opt.native)};
  }
  std::string path = opt.output.empty() ? "-" : opt.output;
  if (opt.format == "html" && opt.output.empty() && isatty(STDOUT_FILENO)) path = kDefaultHtml;
  // (the default name is not the user's choice: a symlink planted there is not followed)
  int rc = write_out({pieces.begin(), pieces.end()}, path, {opt.input}, path != kDefaultHtml);
  if (rc == kExitOk && path == kDefaultHtml)
    error_line(std::string("wrote ") + kDefaultHtml + " (open it in a browser; -o FILE names another, -o - prints it)");
  return rc;
}

int summary_command(const ReportOptions& opt) {
  if (opt.format != "text" && opt.format != "json") {
    error_line("--format must be text or json, not '" + opt.format + "'");
    return kExitUsage;
  }
  analyzer::AnalysisOptions a;
  a.top = std::max<size_t>(opt.top, 10);  // the lists the summary draws from
  a.symbols = symbol_options(opt.sysroot, opt.debug_dirs);
  a.progress = true;
  analyzer::JobReport job;
  bool is_job = false;
  std::string err;
  if (!analyzer::analyze_input(opt.input, a, &job, &is_job, &err)) {
    error_line(err);
    return kExitUsage;
  }
  name_damage(job);
  if (is_job && job.traces.empty()) {
    error_line(opt.input + ": no readable trace");
    return kExitUsage;
  }
  std::string text = opt.format == "json"
                         ? analyzer::json_text(is_job ? analyzer::job_summary_json(job) : analyzer::summary_json(job.traces[0]), 2) + "\n"
                         : is_job ? analyzer::job_summary_text(job, opt.top) : analyzer::summary_text(job.traces[0], opt.top);
  return write_out({text}, opt.output.empty() ? "-" : opt.output, {opt.input});
}

void add_report_commands(CLI::App& app, Commands& out) {
  // report and its one-section forms share their options (one is given per run).
  auto report = std::make_shared<ReportOptions>();
  // `report` (every section), then one command per section (report_render.h, kSections).
  std::vector<std::tuple<std::string, analyzer::Sections, std::string>> forms = {
      {"report", analyzer::Sections::whole(),
       "peak, leaks, fragmentation and OOM root cause of a trace or a directory of traces"}};
  for (const analyzer::SectionInfo& s : analyzer::kSections) forms.push_back({s.name, analyzer::Sections::only(s.id), s.help});
  for (const auto& [name, sections, help] : forms) {
    CLI::App* c = app.add_subcommand(name, help);
    c->add_option("trace", report->input, "trace file, or a directory of traces (a job)")->required();
    c->add_option("--format", report->format, "text, json or html (a self-contained page)")->capture_default_str();
    c->add_option("--top", report->top, "groups per list")->capture_default_str()->check(CLI::Range(1, 100000));
    c->add_option("-o,--output", report->output, "write to this file instead of stdout");
    c->add_option("--sysroot", report->sysroot, "prefix for the traced machine's library paths");
    c->add_option("--debug-dir", report->debug_dirs, "directory with separate debug info (repeatable)");
    c->add_flag("--native", report->native, "show every frame (default: the user's frames first, the interpreter, FFI, "
                "dispatcher, libc and vramtrace frames folded)");
    c->add_option("-j,--jobs", report->jobs, "a directory: traces analysed at once (default: the online CPUs; 1: one by one)")
        ->check(CLI::Range(1u, 4096u));
    if (sections.has(analyzer::Section::peak))
      c->add_option("--at", report->at, "also what was live at this time since the start (12.5s, 250ms, 2m) or at a mark (mark:NAME, the first begin of the vramtrace region NAME)")
          ->check([](const std::string& v) {
            int64_t ns;
            std::string why;
            if (v.rfind("mark:", 0) == 0)
              return v.size() > 5 ? std::string() : std::string("'mark:' needs a region name (mark:NAME)");
            return parse_time(v, &ns, &why) ? std::string() : why + ", or mark:NAME";
          });
    out.push_back({c, [report, sections = sections](const Invocation&) {
                     report->sections = sections;
                     return report_command(*report);
                   }});
  }
  auto summary = std::make_shared<ReportOptions>();
  CLI::App* c = app.add_subcommand(
      "summary", "one screen: peak and who held it, leaks, OOMs and verdicts, largest allocations, allocation sizes");
  c->add_option("trace", summary->input, "trace file, or a directory of traces (a job)")->required();
  c->add_option("--format", summary->format, "text or json")->capture_default_str();
  summary->top = 5;
  c->add_option("--top", summary->top, "largest allocations listed")->capture_default_str()->check(CLI::Range(1, 100000));
  c->add_option("-o,--output", summary->output, "write to this file instead of stdout");
  c->add_option("--sysroot", summary->sysroot, "prefix for the traced machine's library paths");
  c->add_option("--debug-dir", summary->debug_dirs, "directory with separate debug info (repeatable)");
  out.push_back({c, [summary](const Invocation&) { return summary_command(*summary); }});
}

}  // namespace vt::cli
