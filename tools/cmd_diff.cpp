// `vramtrace diff BASE NEW [--format text|json]`: what changed between two runs, per call site.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "analysis.h"
#include "commands.h"
#include "compare.h"
#include "oom_verdict.h"
#include "record_json.h"

namespace vt::cli {

namespace {

bool load_largest(const std::string& input, analyzer::TraceReport* out, std::string* err) {
  analyzer::AnalysisOptions a;
  a.top = 1000000;
  struct stat st;
  if (stat(input.c_str(), &st) != 0) {
    *err = input + ": " + strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) return analyzer::analyze_trace(input, a, out, err);
  analyzer::JobReport job;
  if (!analyzer::analyze_job(input, a, &job, err)) return false;
  size_t best = 0;
  for (size_t i = 1; i < job.traces.size(); ++i)
    if (!job.traces[i].peaks.empty() && (job.traces[best].peaks.empty() || job.traces[i].peaks[0].bytes > job.traces[best].peaks[0].bytes))
      best = i;
  *out = std::move(job.traces[best]);
  return true;
}

std::string signed_bytes(int64_t v) {
  return (v < 0 ? "-" : "+") + analyzer::human_bytes(uint64_t(v < 0 ? -v : v));
}

}  // namespace

int diff_command(const std::string& base_path, const std::string& new_path, const std::string& format) {
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
  analyzer::RunDiff d = analyzer::diff_runs(base, now);
  if (format == "json") {
    nlohmann::json sites = nlohmann::json::array();
    for (const analyzer::SiteChange& c : d.sites)
      sites.push_back({{"site", c.label}, {"key", c.key}, {"base_peak_bytes", c.base_peak}, {"new_peak_bytes", c.new_peak},
                       {"peak_change_bytes", c.new_peak - c.base_peak}, {"base_leak_bytes", c.base_leak},
                       {"new_leak_bytes", c.new_leak}, {"leak_change_bytes", c.new_leak - c.base_leak},
                       {"added", c.added}, {"vanished", c.vanished}, {"stack", analyzer::stack_json(c.stack)}});
    nlohmann::json j = {{"schema", "vramtrace.diff/1"}, {"base", base_path}, {"new", new_path},
                        {"peak", {{"base_bytes", d.base_peak}, {"new_bytes", d.new_peak},
                                  {"change_bytes", int64_t(d.new_peak) - int64_t(d.base_peak)}}},
                        {"leaks", {{"base_bytes", d.base_leak}, {"new_bytes", d.new_leak},
                                   {"change_bytes", int64_t(d.new_leak) - int64_t(d.base_leak)}}},
                        {"sites", sites}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "peak: " << analyzer::human_bytes(d.base_peak) << " -> " << analyzer::human_bytes(d.new_peak) << " ("
            << signed_bytes(int64_t(d.new_peak) - int64_t(d.base_peak)) << ")\n";
  std::cout << "leaks: " << analyzer::human_bytes(d.base_leak) << " -> " << analyzer::human_bytes(d.new_leak) << " ("
            << signed_bytes(int64_t(d.new_leak) - int64_t(d.base_leak)) << ")\n";
  std::cout << "call sites, largest change first:\n";
  int shown = 0;
  for (const analyzer::SiteChange& c : d.sites) {
    if (c.change() == 0) continue;
    if (++shown > 30) break;
    std::cout << "  " << (c.added ? "NEW  " : c.vanished ? "GONE " : "     ") << "peak " << signed_bytes(c.new_peak - c.base_peak)
              << ", leaks " << signed_bytes(c.new_leak - c.base_leak) << "  " << c.label << "\n";
  }
  if (!shown) std::cout << "  no change\n";
  return 0;
}

}  // namespace vt::cli
