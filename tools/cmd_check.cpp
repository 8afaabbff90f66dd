// `vramtrace check`: a CI gate. Exit 0 when every limit holds, 1 when one is broken (each on its
// own line with actual vs allowed), 2 for usage errors or unreadable input.
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <iostream>

#include "analysis.h"
#include "commands.h"
#include "compare.h"
#include <nlohmann/json.hpp>

#include "oom_verdict.h"

namespace vt::cli {

namespace {

using analyzer::human_bytes;

struct Violation {
  std::string rule, trace, message;
  double actual = 0, allowed = 0;
};

bool load(const std::string& input, std::vector<analyzer::TraceReport>* out, std::string* err) {
  analyzer::AnalysisOptions a;
  a.top = 1000000;  // every site: gates compare all of them
  struct stat st;
  if (stat(input.c_str(), &st) != 0) {
    *err = input + ": " + strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    analyzer::JobReport job;
    if (!analyzer::analyze_job(input, a, &job, err)) return false;
    *out = std::move(job.traces);
    return true;
  }
  out->resize(1);
  return analyzer::analyze_trace(input, a, &(*out)[0], err);
}

uint64_t peak_of(const analyzer::TraceReport& r) { return r.peaks.empty() ? 0 : r.peaks[0].bytes; }

const analyzer::TraceReport& largest(const std::vector<analyzer::TraceReport>& v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (peak_of(v[i]) > peak_of(v[best])) best = i;
  return v[best];
}

std::string pct(double v) {
  char b[32];
  snprintf(b, sizeof b, "%+.1f%%", v);
  return b;
}

}  // namespace

int check_command(const CheckOptions& opt) {
  uint64_t max_peak = 0, max_leak = 0;
  std::string why;
  if (!opt.max_peak.empty() && !analyzer::parse_size(opt.max_peak, &max_peak, &why)) {
    error_line("--max-peak: " + why);
    return 2;
  }
  if (!opt.max_leak.empty() && !analyzer::parse_size(opt.max_leak, &max_leak, &why)) {
    error_line("--max-leak: " + why);
    return 2;
  }
  bool growth_limits = opt.max_peak_growth >= 0 || opt.max_site_growth >= 0;
  if (growth_limits && opt.baseline.empty()) {
    error_line("--max-peak-growth and --max-site-growth need --baseline");
    return 2;
  }
  if (!opt.baseline.empty() && !growth_limits) {
    error_line("--baseline needs --max-peak-growth or --max-site-growth");
    return 2;
  }
  if (opt.max_peak.empty() && opt.max_leak.empty() && !opt.no_oom && !growth_limits) {
    error_line("check: no limit given (--max-peak, --max-leak, --no-oom, --baseline with growth limits)");
    return 2;
  }

  std::vector<analyzer::TraceReport> runs, base;
  std::string err;
  if (!load(opt.input, &runs, &err) || (!opt.baseline.empty() && !load(opt.baseline, &base, &err))) {
    error_line(err);
    return 2;
  }

  std::vector<Violation> v;
  for (const analyzer::TraceReport& r : runs) {
    uint64_t peak = peak_of(r);
    if (!opt.max_peak.empty() && peak > max_peak)
      v.push_back({"max_peak", r.path, "peak " + human_bytes(peak) + " (" + std::to_string(peak) + " bytes) > allowed " +
                                           human_bytes(max_peak) + " in " + r.path,
                   double(peak), double(max_peak)});
    if (!opt.max_leak.empty() && r.leak_bytes > max_leak)
      v.push_back({"max_leak", r.path, "leaked " + human_bytes(r.leak_bytes) + " (" + std::to_string(r.leak_bytes) +
                                           " bytes) > allowed " + human_bytes(max_leak) + " in " + r.path,
                   double(r.leak_bytes), double(max_leak)});
    if (opt.no_oom && !r.ooms.empty())
      v.push_back({"no_oom", r.path, std::to_string(r.ooms.size()) + " failed allocation" + (r.ooms.size() > 1 ? "s" : "") +
                                         " (first: " + human_bytes(r.ooms[0].requested_bytes) + ", verdict " + r.ooms[0].verdict +
                                         ") > allowed 0 in " + r.path,
                   double(r.ooms.size()), 0});
  }
  if (!base.empty()) {
    const analyzer::TraceReport& b = largest(base);
    const analyzer::TraceReport& n = largest(runs);
    analyzer::RunDiff d = analyzer::diff_runs(b, n);
    if (opt.max_peak_growth >= 0 && d.base_peak) {
      double g = (double(d.new_peak) - double(d.base_peak)) * 100.0 / double(d.base_peak);
      if (g > opt.max_peak_growth)
        v.push_back({"max_peak_growth", n.path, "peak growth " + pct(g) + " (" + human_bytes(d.new_peak) + " vs baseline " +
                                                    human_bytes(d.base_peak) + ") > allowed " + pct(opt.max_peak_growth),
                     g, opt.max_peak_growth});
    }
    if (opt.max_site_growth >= 0) {
      for (const analyzer::SiteChange& c : d.sites) {
        if (c.base_peak > 0) {
          double g = double(c.new_peak - c.base_peak) * 100.0 / double(c.base_peak);
          if (g > opt.max_site_growth)
            v.push_back({"max_site_growth", n.path, "site growth " + pct(g) + " at " + c.label + " (" + human_bytes(uint64_t(c.new_peak)) +
                                                        " vs baseline " + human_bytes(uint64_t(c.base_peak)) + ") > allowed " +
                                                        pct(opt.max_site_growth),
                         g, opt.max_site_growth});
        } else if (c.new_peak > 0 && double(c.new_peak) > 0.01 * double(d.base_peak)) {
          // A site the baseline did not have counts when it matters (over 1% of the baseline peak).
          v.push_back({"max_site_growth", n.path, "new site " + c.label + " holds " + human_bytes(uint64_t(c.new_peak)) +
                                                      " at the peak (not in the baseline) > allowed " + pct(opt.max_site_growth),
                       INFINITY, opt.max_site_growth});
        }
      }
    }
  }

  if (opt.json) {
    nlohmann::json out = {{"ok", v.empty()}, {"violations", nlohmann::json::array()}};
    for (const Violation& x : v)
      out["violations"].push_back({{"rule", x.rule}, {"trace", x.trace}, {"message", x.message},
                                   {"actual", std::isfinite(x.actual) ? nlohmann::json(x.actual) : nlohmann::json(nullptr)},
                                   {"allowed", x.allowed}});
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const Violation& x : v) std::cout << "FAIL " << x.rule << ": " << x.message << "\n";
    if (v.empty()) std::cout << "ok: every limit holds (" << runs.size() << " trace" << (runs.size() > 1 ? "s" : "") << ")\n";
  }
  return v.empty() ? 0 : 1;
}

}  // namespace vt::cli
