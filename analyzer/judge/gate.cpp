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

std::string bytes_exact(uint64_t n) { return format_bytes(n) + " (" + std::to_string(n) + " bytes)"; }

// The limits on one run's own figures.
void judge_run(const TraceReport& r, const GateLimits& lim, std::vector<Violation>* v) {
  uint64_t peak = peak_of(r);
  TorchPeaks tp = torch_peaks(r);
  if (lim.has_max_peak && peak > lim.max_peak) {
    std::string m = "peak " + bytes_exact(peak) + " > allowed " + format_bytes(lim.max_peak) + " in " + r.path;
    // A PyTorch user reads "memory" as allocated: say which figure this is, and which flags judge theirs.
    if (tp.known)
      m += ": device memory as the driver saw it (PyTorch's reserved, which peaked at " + format_bytes(tp.reserved) +
           ", plus memory outside PyTorch); --max-allocated and --max-reserved judge PyTorch's own figures";
    v->push_back({"max_peak", r.path, m, "driver_peak", double(peak), double(lim.max_peak)});
  }
  if (lim.has_max_allocated && tp.known && tp.allocated > lim.max_allocated)
    v->push_back({"max_allocated", r.path,
                  "PyTorch's peak allocated " + bytes_exact(tp.allocated) + " on GPU " + std::to_string(tp.allocated_device) +
                      " (max_memory_allocated: live tensors) > allowed " + format_bytes(lim.max_allocated) + " in " + r.path,
                  "pytorch_peak_allocated", double(tp.allocated), double(lim.max_allocated)});
  if (lim.has_max_reserved && tp.known && tp.reserved > lim.max_reserved)
    v->push_back({"max_reserved", r.path,
                  "PyTorch's peak reserved " + bytes_exact(tp.reserved) + " on GPU " + std::to_string(tp.reserved_device) +
                      " (max_memory_reserved: its cached segments) > allowed " + format_bytes(lim.max_reserved) + " in " + r.path,
                  "pytorch_peak_reserved", double(tp.reserved), double(lim.max_reserved)});
  if (lim.has_max_leak && r.leak_bytes > lim.max_leak) {
    std::string m = "leaked " + bytes_exact(r.leak_bytes) + " > allowed " + format_bytes(lim.max_leak) + " in " + r.path;
    if (r.torch_cache_at_exit.known)
      m += ": PyTorch's tensors still allocated at the end and memory outside PyTorch (its caches are not counted)";
    v->push_back({"max_leak", r.path, m, "leaks", double(r.leak_bytes), double(lim.max_leak)});
  }
  if (lim.no_oom && !r.ooms.empty())
    v->push_back({"no_oom", r.path, std::to_string(r.oom_count()) + " failed allocation" + (r.oom_count() > 1 ? "s" : "") +
                                        " (first: " + format_bytes(r.ooms[0].requested_bytes) + ", verdict " + r.ooms[0].verdict +
                                        ") > allowed 0 in " + r.path,
                  "ooms", double(r.oom_count()), 0});
}

// One figure's growth over the baseline, when above `limit` percent. From a baseline that held
// nothing, any figure is growth past every limit.
void judge_growth(const std::string& rule, const std::string& figure, const std::string& what, uint64_t base, uint64_t now,
                  double limit, const std::string& who, const std::string& path, std::vector<Violation>* v) {
  if (limit < 0 || (!base && !now)) return;
  double g = base ? (double(now) - double(base)) * 100.0 / double(base) : INFINITY;
  if (g > limit)
    v->push_back({rule, path,
                  who + what + " growth " + (std::isfinite(g) ? pct(g) : std::string("from 0 B")) + " (" + format_bytes(now) +
                      " vs baseline " + format_bytes(base) + ") > allowed " + pct(limit),
                  figure, g, limit});
}

// The growth limits of one pair of runs (a rank of a job, or the runs with the highest peaks).
void judge_pair(const RunPair& p, bool ranked, const GateLimits& lim, std::vector<Violation>* v) {
  const std::string who = ranked ? "rank " + std::to_string(p.now->process.rank) + ": " : "";
  const std::string& path = p.now->path;
  RunDiff d = diff_runs(*p.base, *p.now);
  judge_growth("max_peak_growth", "driver_peak", "peak", d.base_peak, d.new_peak, lim.max_peak_growth, who, path, v);
  if (d.torch) {  // (missing_torch_figures refused the limits when a run has no figures)
    judge_growth("max_allocated_growth", "pytorch_peak_allocated", "PyTorch's peak allocated", d.base_allocated,
                 d.new_allocated, lim.max_allocated_growth, who, path, v);
    judge_growth("max_reserved_growth", "pytorch_peak_reserved", "PyTorch's peak reserved", d.base_reserved, d.new_reserved,
                 lim.max_reserved_growth, who, path, v);
  }
  if (lim.max_site_growth < 0) return;
  for (const SiteChange& c : d.sites) {
    if (c.base_peak > 0) {
      double g = (double(c.new_peak) - double(c.base_peak)) * 100.0 / double(c.base_peak);
      if (g > lim.max_site_growth)
        v->push_back({"max_site_growth", path,
                      who + "site growth " + pct(g) + " at " + c.label + " (" + format_bytes(c.new_peak) + " vs baseline " +
                          format_bytes(c.base_peak) + ") > allowed " + pct(lim.max_site_growth),
                      "site_peak", g, lim.max_site_growth});
    } else if (c.new_peak > 0 && double(c.new_peak) > 0.01 * double(d.base_peak)) {
      // A site the baseline did not have counts when it matters (over 1% of the baseline peak).
      v->push_back({"max_site_growth", path,
                    who + "new site " + c.label + " holds " + format_bytes(c.new_peak) +
                        " at the peak (not in the baseline) > allowed " + pct(lim.max_site_growth),
                    "site_peak", INFINITY, lim.max_site_growth});
    }
  }
}

// The first readable run without PyTorch's figures, as "PATH: why"; "" when all have them.
std::string first_without_figures(const std::vector<TraceReport>& runs) {
  for (const TraceReport& r : runs) {
    if (r.unreadable) continue;
    TorchPeaks tp = torch_peaks(r);
    if (!tp.known) return r.path + " has none: " + tp.missing;
  }
  return "";
}

}  // namespace

std::string missing_torch_figures(const std::vector<TraceReport>& runs, const std::vector<TraceReport>& base,
                                  const GateLimits& lim) {
  std::string flags;
  int n = 0;
  for (auto [set, name] : {std::pair{lim.has_max_allocated, "--max-allocated"}, {lim.has_max_reserved, "--max-reserved"},
                           {lim.max_allocated_growth >= 0, "--max-allocated-growth"},
                           {lim.max_reserved_growth >= 0, "--max-reserved-growth"}})
    if (set) flags += (n++ ? ", " : "") + std::string(name);
  if (!n) return "";
  std::string why = first_without_figures(runs);
  if (why.empty() && (lim.max_allocated_growth >= 0 || lim.max_reserved_growth >= 0)) why = first_without_figures(base);
  if (why.empty()) return "";
  return "check: " + flags + (n > 1 ? " need" : " needs") + " PyTorch's block figures (allocated, reserved); " + why +
         " (--max-peak judges device memory as the driver saw it)";
}

std::vector<Violation> judge_gate(const std::vector<TraceReport>& runs, const std::vector<TraceReport>& base,
                                  const GateLimits& lim) {
  std::vector<Violation> v;
  for (const TraceReport& r : runs)
    if (!r.unreadable) judge_run(r, lim, &v);
  bool ranked = false;
  for (const RunPair& p : matched_runs(base, runs, &ranked)) judge_pair(p, ranked, lim, &v);
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
                                 {"figure", x.figure},
                                 {"actual", std::isfinite(x.actual) ? nlohmann::json(x.actual) : nlohmann::json(nullptr)},
                                 {"allowed", x.allowed}});
  return out;
}

}  // namespace vt::analyzer
