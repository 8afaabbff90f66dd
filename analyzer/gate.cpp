// See gate.h.
#include "gate.h"

#include <cmath>
#include <cstdio>

#include "compare.h"
#include "byte_size.h"
#include "terminal_escape.h"

namespace vt::analyzer {

namespace {

uint64_t peak_of(const TraceReport& r) { return r.peaks.empty() ? 0 : r.peaks[0].bytes; }

std::string pct(double v) {
  char b[32];
  snprintf(b, sizeof b, "%+.1f%%", v);
  return b;
}

}  // namespace

std::vector<Violation> judge_gate(const std::vector<TraceReport>& runs, const std::vector<TraceReport>& base,
                                  const GateLimits& lim) {
  std::vector<Violation> v;
  for (const TraceReport& r : runs) {
    if (r.unreadable) continue;
    uint64_t peak = peak_of(r);
    if (lim.has_max_peak && peak > lim.max_peak)
      v.push_back({"max_peak", r.path, "peak " + format_bytes(peak) + " (" + std::to_string(peak) + " bytes) > allowed " +
                                           format_bytes(lim.max_peak) + " in " + r.path,
                   double(peak), double(lim.max_peak)});
    if (lim.has_max_leak && r.leak_bytes > lim.max_leak)
      v.push_back({"max_leak", r.path, "leaked " + format_bytes(r.leak_bytes) + " (" + std::to_string(r.leak_bytes) +
                                           " bytes) > allowed " + format_bytes(lim.max_leak) + " in " + r.path,
                   double(r.leak_bytes), double(lim.max_leak)});
    if (lim.no_oom && !r.ooms.empty())
      v.push_back({"no_oom", r.path, std::to_string(r.ooms.size()) + " failed allocation" + (r.ooms.size() > 1 ? "s" : "") +
                                         " (first: " + format_bytes(r.ooms[0].requested_bytes) + ", verdict " + r.ooms[0].verdict +
                                         ") > allowed 0 in " + r.path,
                   double(r.ooms.size()), 0});
  }
  bool ranked = false;
  for (const RunPair& p : matched_runs(base, runs, &ranked)) {
    const std::string who = ranked ? "rank " + std::to_string(p.now->process.rank) + ": " : "";
    RunDiff d = diff_runs(*p.base, *p.now);
    if (lim.max_peak_growth >= 0 && (d.base_peak || d.new_peak)) {
      // From a baseline that held nothing, any peak is growth past every limit.
      double g = d.base_peak ? (double(d.new_peak) - double(d.base_peak)) * 100.0 / double(d.base_peak) : INFINITY;
      if (g > lim.max_peak_growth)
        v.push_back({"max_peak_growth", p.now->path,
                     who + "peak growth " + (std::isfinite(g) ? pct(g) : std::string("from 0 B")) + " (" +
                         format_bytes(d.new_peak) + " vs baseline " + format_bytes(d.base_peak) + ") > allowed " +
                         pct(lim.max_peak_growth),
                     g, lim.max_peak_growth});
    }
    if (lim.max_site_growth >= 0) {
      for (const SiteChange& c : d.sites) {
        if (c.base_peak > 0) {
          double g = (double(c.new_peak) - double(c.base_peak)) * 100.0 / double(c.base_peak);
          if (g > lim.max_site_growth)
            v.push_back({"max_site_growth", p.now->path,
                         who + "site growth " + pct(g) + " at " + c.label + " (" + format_bytes(c.new_peak) +
                             " vs baseline " + format_bytes(c.base_peak) + ") > allowed " + pct(lim.max_site_growth),
                         g, lim.max_site_growth});
        } else if (c.new_peak > 0 && double(c.new_peak) > 0.01 * double(d.base_peak)) {
          // A site the baseline did not have counts when it matters (over 1% of the baseline peak).
          v.push_back({"max_site_growth", p.now->path,
                       who + "new site " + c.label + " holds " + format_bytes(c.new_peak) +
                           " at the peak (not in the baseline) > allowed " + pct(lim.max_site_growth),
                       INFINITY, lim.max_site_growth});
        }
      }
    }
  }
  return v;
}

std::string gate_text(const std::vector<Violation>& v, size_t traces, size_t damaged, size_t unreadable, bool damage_fails) {
  std::string o;
  for (const Violation& x : v) o += "FAIL " + x.rule + ": " + terminal_escape(x.message) + "\n";
  if (damage_fails) {
    size_t n = damaged + unreadable;
    o += "FAIL damaged: " + std::to_string(n) + " damaged or unreadable trace" + (n == 1 ? "" : "s") +
         " (named on stderr); --allow-damaged judges what could be read\n";
  } else if (v.empty()) {
    o += "ok: every limit holds (" + std::to_string(traces) + " trace" + (traces == 1 ? "" : "s");
    if (damaged) o += "; " + std::to_string(damaged) + " damaged, judged on what could be read";
    if (unreadable) o += "; " + std::to_string(unreadable) + " unreadable, left out";
    o += ")\n";
  }
  return o;
}

nlohmann::json gate_json(const std::vector<Violation>& v, const nlohmann::json& problems, bool damage_ok) {
  nlohmann::json out = {{"ok", v.empty() && damage_ok}, {"violations", nlohmann::json::array()},
                        {"problems", problems}};
  for (const Violation& x : v)
    out["violations"].push_back({{"rule", x.rule}, {"trace", x.trace}, {"message", x.message},
                                 {"actual", std::isfinite(x.actual) ? nlohmann::json(x.actual) : nlohmann::json(nullptr)},
                                 {"allowed", x.allowed}});
  return out;
}

}  // namespace vt::analyzer
