// See report_html.h. This file turns the report into the page's data (a compact JSON: frames
// and stacks interned once, times relative to the trace start, lists capped) and wraps it with
// the embedded style and script (analyzer/html/, compiled in by analyzer/html/embed.cmake).
#include "report_html.h"

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>

#include "analysis.h"
#include "torch_verdict.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace html_assets {  // generated from analyzer/html/*.css, *.js: one string per file, in order
extern const char* const kCss[];
extern const size_t kCssCount;
extern const char* const kJs[];
extern const size_t kJsCount;
}  // namespace html_assets

namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence at s[i], 0 when invalid (overlong, surrogate, > U+10FFFF).
size_t utf8_len(const std::string& s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && b(i + 1) < 0xa0) || (c == 0xed && b(i + 1) >= 0xa0))) return 0;
  if (n == 4 && ((c == 0xf0 && b(i + 1) < 0x90) || (c == 0xf4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

// Valid UTF-8 of at most about `max` bytes: invalid bytes become U+FFFD, a cut adds "…".
std::string clean(const std::string& s, size_t max = kHtmlMaxString) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 8);
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max) {
      out += "\xe2\x80\xa6";
      break;
    }
    size_t n = utf8_len(s, i);
    if (n) out.append(s, i, n), i += n;
    else out += "\xef\xbf\xbd", ++i;
  }
  return out;
}

// Frames and stacks are shared by many lists (the same site leaks, holds the peak and grows),
// so each is written once and referred to by index.
class Packer {
 public:
  int frame(const Frame& f) {
    std::string key = f.function + '\0' + f.file + '\0' + std::to_string(f.line) + '\0' + f.module + '\0' +
                      std::to_string(f.offset) + (f.python ? "p" : "") + (f.inlined ? "i" : "");
    auto [it, added] = frame_ids_.emplace(key, int(frames_.size()));
    if (added)
      frames_.push_back({clean(f.function), clean(f.file), f.line, clean(f.module),
                         (f.python ? 1 : 0) | (f.inlined ? 2 : 0) | (is_machinery_frame(f) ? 4 : 0), f.offset});
    return it->second;
  }
  int stack(const std::vector<Frame>& st) {
    std::vector<int> ids;
    for (size_t i = 0; i < st.size() && i < kHtmlMaxFrames; ++i) ids.push_back(frame(st[i]));
    if (st.size() > kHtmlMaxFrames) {
      Frame more;
      more.function = "(" + std::to_string(st.size() - kHtmlMaxFrames) + " outer frames not shown)";
      ids.push_back(frame(more));
    }
    auto [it, added] = stack_ids_.emplace(ids, int(stacks_.size()));
    if (added) stacks_.push_back(ids);
    return it->second;
  }
  void put(json& data) {
    data["frames"] = std::move(frames_);
    data["stacks"] = std::move(stacks_);
  }

 private:
  json frames_ = json::array(), stacks_ = json::array();
  std::unordered_map<std::string, int> frame_ids_;
  std::map<std::vector<int>, int> stack_ids_;
};

struct TraceWriter {
  Packer& pk;
  const TraceReport& r;
  uint64_t base;  // times are written relative to this (the trace start), in ns

  int64_t rel(uint64_t t) const { return int64_t(t - base); }

  json group(const SiteGroup& g) {
    return {{"b", g.bytes}, {"n", g.count}, {"sh", g.share}, {"k", clean(g.kind)}, {"d", g.device}, {"s", pk.stack(g.stack)}};
  }
  // The first kHtmlMaxGroups groups, and what the rest add up to.
  json groups(const std::vector<SiteGroup>& v) {
    json a = json::array();
    uint64_t sites = 0, bytes = 0, count = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i < kHtmlMaxGroups) {
        a.push_back(group(v[i]));
      } else {
        sites++;
        bytes += v[i].bytes;
        count += v[i].count;
      }
    }
    return {{"list", a}, {"more", {{"sites", sites}, {"b", bytes}, {"n", count}}}};
  }
  json growth(const std::vector<GrowthSite>& v) {
    json a = json::array();
    for (size_t i = 0; i < v.size() && i < kHtmlMaxGroups; ++i) {
      json g = group(v[i].site);
      g["gb"] = v[i].growth_bytes;
      g["nh"] = v[i].new_highs;
      g["t0"] = rel(v[i].first_t_ns);
      g["t1"] = rel(v[i].last_t_ns);
      a.push_back(g);
    }
    return a;
  }
  // At most 4096 points per series, halving by pairs that keep their maximum (the analysis
  // gives ~1024; this only guards the page against a larger --timeline setting).
  json series(const TimelineSeries& s) {
    std::vector<std::pair<uint64_t, uint64_t>> p = s.points;
    while (p.size() > 4096) {
      std::vector<std::pair<uint64_t, uint64_t>> q;
      for (size_t i = 0; i < p.size(); i += 2)
        q.push_back(i + 1 < p.size() && p[i + 1].second > p[i].second ? p[i + 1] : p[i]);
      p.swap(q);
    }
    json pts = json::array();
    for (const auto& [t, b] : p) pts.push_back({rel(t), b});
    return {{"device", s.device}, {"kind", clean(s.kind)}, {"points", pts}};
  }
  json oom(const OomReport& o) {
    json causes = json::array();
    for (const Cause& c : o.causes)
      causes.push_back({{"code", clean(c.code)}, {"score", c.score}, {"summary", clean(c.summary)}, {"ev", c.evidence}});
    json procs = json::array();
    for (size_t i = 0; i < o.other_processes.size() && i < kHtmlMaxGroups; ++i)
      procs.push_back({{"pid", o.other_processes[i].pid}, {"name", clean(o.other_processes[i].name)},
                       {"b", o.other_processes[i].bytes}});
    json remedies = json::array();
    for (const std::string& m : o.remedies) remedies.push_back(clean(m));
    return {{"t", rel(o.t_ns)}, {"op", clean(o.op)}, {"result", o.result}, {"device", o.device},
            {"req", o.requested_bytes}, {"free", o.device_free_bytes}, {"total", o.device_total_bytes},
            {"proc", o.process_device_bytes}, {"by_kind", o.process_by_kind}, {"na", o.not_attributable_bytes},
            {"pool_cached", o.pool_cached_bytes}, {"vmm_unmapped", o.vmm_unmapped_bytes}, {"s", pk.stack(o.stack)},
            {"holders", groups(o.top_holders)}, {"grew", growth(o.grew_before)}, {"verdict", clean(o.verdict)},
            {"causes", causes}, {"remedies", remedies}, {"nvml", o.nvml}, {"others", procs},
            {"torch", o.torch ? torch_oom(o.torch_info) : json(nullptr)}};
  }
  // PyTorch's view (present only where PyTorch was seen): figures per device, the tensor
  // timeline by line, the view at the peak, and each OOM's PyTorch part (in oom()).
  static json figures(const TorchFigures& f) {
    return {{"alloc", f.allocated}, {"res", f.reserved}, {"unalloc", f.reserved_unallocated()},
            {"split", f.inactive_split}, {"largest", f.largest_free_block}, {"segs", f.segments}, {"blocks", f.blocks}};
  }
  json torch_view(const TorchView& v) {
    json segs = json::array();
    for (size_t i = 0; i < v.segments.size() && i < kHtmlMaxGroups; ++i) {
      const TorchSegment& g = v.segments[i];
      segs.push_back({{"addr", g.address}, {"size", g.size}, {"alloc", g.allocated}, {"largest", g.largest_free},
                      {"blocks", g.blocks}, {"exp", g.expandable}});
    }
    return {{"t", rel(v.t_ns)}, {"fig", figures(v.figures)}, {"holders", groups(v.holders)}, {"segs", segs},
            {"more_segs", v.segments_not_shown + (v.segments.size() > kHtmlMaxGroups ? v.segments.size() - kHtmlMaxGroups : 0)}};
  }
  json torch() {
    const TorchReport& t = r.torch;
    json devices = json::array();
    for (const TorchDevice& d : t.devices) {
      json lines = json::array();
      for (const TorchLineSeries& s : d.tensors.lines)
        lines.push_back({{"label", clean(s.line)}, {"s", pk.stack(s.stack)}, {"v", s.values}});
      json times = json::array();
      for (uint64_t x : d.tensors.t_ns) times.push_back(rel(x));
      devices.push_back({{"device", d.device}, {"peak", d.peak_allocated}, {"peak_t", rel(d.peak_allocated_t_ns)},
                         {"peak_res", d.peak_reserved}, {"peak_res_t", rel(d.peak_reserved_t_ns)},
                         {"at_peak", torch_view(d.peak)},
                         {"worst", {{"t", rel(d.worst_fragmentation_t_ns)}, {"fig", figures(d.worst_fragmentation)},
                                    {"ratio", d.worst_fragmentation_ratio}}},
                         {"end_alloc", d.end_allocated}, {"end_res", d.end_reserved},
                         {"tensors", {{"t", times}, {"lines", lines}, {"other", d.tensors.other}}}});
    }
    json growth = json::array();
    for (size_t i = 0; i < t.growth.size() && i < kHtmlMaxGroups; ++i) {
      const TorchGrowth& g = t.growth[i];
      growth.push_back({{"b", g.bytes}, {"gb", g.growth_bytes}, {"n", g.count}, {"nh", g.new_highs}, {"t0", rel(g.first_t_ns)},
                        {"t1", rel(g.last_t_ns)}, {"s", pk.stack(g.stack)}, {"k", "tensor"}, {"d", g.device}});
    }
    return {{"mode", clean(t.mode)}, {"layer", clean(t.layer)}, {"detail", clean(t.layer_detail)},
            {"conf", clean(t.alloc_conf)}, {"devices", devices}, {"growth", growth}};
  }
  json torch_oom(const TorchOomInfo& t) {
    return {{"msg", clean(t.message)}, {"block", t.block_size}, {"tried", t.tried_to_allocate}, {"attempts", t.driver_attempts},
            {"outside", t.outside_bytes}, {"outside_groups", groups(t.outside)}, {"at", torch_view(t.view)}};
  }
  json frag() {
    const Fragmentation& f = r.fragmentation;
    json pools = json::array(), flushes = json::array();
    for (size_t i = 0; i < f.pools.size() && i < kHtmlMaxGroups; ++i) {
      const PoolFragmentation& p = f.pools[i];
      pools.push_back({{"pool", clean(p.pool)}, {"device", p.device}, {"footprint", p.footprint_bytes}, {"live", p.live_bytes},
                       {"gap", p.largest_free_gap_bytes}, {"frag", p.fragmentation}});
    }
    for (size_t i = 0; i < f.cache_flushes.size() && i < kHtmlMaxGroups; ++i) {
      const CacheFlush& c = f.cache_flushes[i];
      flushes.push_back({{"t", rel(c.t_ns)}, {"req", c.requested_bytes}, {"freed", c.freed_bytes}, {"n", c.freed_count},
                         {"ok", c.retry_succeeded}});
    }
    return {{"vmm", {{"reserved_at_peak", f.vmm_reserved_bytes_at_peak}, {"mapped_at_peak", f.vmm_mapped_bytes_at_peak},
                     {"reserved_max", f.vmm_reserved_bytes_max}, {"mapped_max", f.vmm_mapped_bytes_max}}},
            {"pools", pools}, {"pools_total", f.pools.size()}, {"flushes", flushes},
            {"flushes_total", f.cache_flushes.size()}};
  }
  json process() {
    const ProcessInfo& p = r.process;
    json argv = json::array(), devices = json::array();
    for (size_t i = 0; i < p.argv.size() && i < 256; ++i) argv.push_back(clean(p.argv[i]));
    for (const DeviceInfo& d : p.devices)
      devices.push_back({{"ordinal", d.ordinal}, {"name", clean(d.name)}, {"total", d.total_bytes}, {"uuid", clean(d.uuid)}});
    // Wall-clock time of `base` in ms since the epoch, for the header (0 when unknown).
    double wall_ms = p.start_realtime_ns && p.start_monotonic_ns ? (double(p.start_realtime_ns) + double(int64_t(base - p.start_monotonic_ns))) / 1e6 : 0;
    return {{"pid", p.pid}, {"ppid", p.ppid}, {"argv", argv}, {"argc", p.argv.size()}, {"exe", clean(p.exe)},
            {"host", clean(p.hostname)}, {"session", clean(p.session)}, {"rank", p.rank}, {"local_rank", p.local_rank},
            {"driver", p.driver_version}, {"closed", p.closed_cleanly}, {"tracing_failed", p.tracing_failed},
            {"devices", devices}, {"wall_ms", wall_ms}};
  }

  json trace() {
    json peaks = json::array();
    for (const DevicePeak& p : r.peaks)
      peaks.push_back({{"device", p.device}, {"bytes", p.bytes}, {"t", rel(p.t_ns)}, {"by_kind", p.by_kind},
                       {"groups", groups(p.live_set)}});
    json timeline = json::array();
    for (const TimelineSeries& s : r.timeline) timeline.push_back(series(s));
    json ooms = json::array();
    std::map<std::string, uint64_t> verdicts;
    for (size_t i = 0; i < r.ooms.size(); ++i) {
      if (i < kHtmlMaxOoms) ooms.push_back(oom(r.ooms[i]));
      verdicts[clean(r.ooms[i].verdict)]++;
    }
    json problems = json::array();
    for (size_t i = 0; i < r.problems.size() && i < 100; ++i) problems.push_back(clean(r.problems[i]));
    json regions = json::array();
    for (size_t i = 0; i < r.regions.size() && i < kHtmlMaxGroups; ++i) {
      const RegionReport& g = r.regions[i];
      regions.push_back({{"name", clean(g.name)}, {"t0", rel(g.t_begin)}, {"t1", rel(g.t_end)}, {"closed", g.closed},
                         {"start", g.start_bytes}, {"end", g.end_bytes}, {"peak", g.peak_bytes}});
    }
    return {{"path", clean(r.path)}, {"process", process()}, {"problems", problems}, {"partial", r.partial},
            {"events", r.events}, {"failed", r.failed_events}, {"unmatched", r.unmatched_frees},
            {"first", rel(r.first_t_ns)}, {"last", rel(r.last_t_ns)},
            {"peaks", peaks}, {"pinned_peak", r.pinned_host_peak_bytes}, {"managed_peak", r.managed_peak_bytes},
            {"timeline", timeline},
            {"leaks", {{"end", clean(r.end)}, {"b", r.leak_bytes}, {"n", r.leak_count}, {"groups", groups(r.leaks)},
                       {"teardown", {{"b", r.teardown_bytes}, {"n", r.teardown_count}, {"groups", groups(r.teardown)}}},
                       {"growth", growth(r.growth)}}},
            {"frag", frag()}, {"ooms", ooms}, {"ooms_total", r.ooms.size()}, {"verdicts", verdicts},
            {"regions", regions}, {"regions_total", r.regions.size()},
            {"torch", r.torch.present ? torch() : json(nullptr)}};
  }
};

// The same origin as the text report: the process start when it precedes the first event.
uint64_t time_base(const TraceReport& r) {
  uint64_t s = r.process.start_monotonic_ns;
  return s && s < r.first_t_ns ? s : r.first_t_ns;
}

std::string nonce() {
  std::random_device rd;
  std::string n;
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int i = 0; i < 22; ++i) n += a[rd() % 62];
  return n;
}

std::string page(const std::string& title, const json& data) {
  std::string n = nonce();
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
         "style-src 'unsafe-inline'; script-src 'nonce-" + n + "'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"vramtrace\">\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>\n";
  for (size_t i = 0; i < html_assets::kCssCount; ++i) out += html_assets::kCss[i];
  out += "</style>\n</head>\n<body data-vt-status=\"loading\">\n";
  out += "<div id=\"vt-app\"><noscript><p>This report is drawn by JavaScript, which is disabled. Its data is "
         "embedded in this file as JSON (the script element with id vt-data); <code>vramtrace report "
         "--format json</code> gives the full report.</p></noscript></div>\n";
  out += "<div id=\"vt-tip\" hidden></div>\n<pre id=\"vt-errors\" hidden></pre>\n";
  out += "<script type=\"application/json\" id=\"vt-data\">";
  out += script_safe_json(data);
  out += "</script>\n<script nonce=\"" + n + "\">\n";
  for (size_t i = 0; i < html_assets::kJsCount; ++i) out += html_assets::kJs[i];
  out += "</script>\n</body>\n</html>\n";
  return out;
}

std::string command_line(const ProcessInfo& p) {
  std::string cmd;
  for (const std::string& a : p.argv) {
    if (cmd.size() > 200) break;
    cmd += (cmd.empty() ? "" : " ") + a;
  }
  return clean(cmd, 200);
}

}  // namespace

std::string html_escape(const std::string& raw) {
  std::string s = clean(raw, ~size_t(0) >> 1), out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(const json& j) {
  // Strings are valid UTF-8 already (clean()); `replace` only guards hand-made input.
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace), out;
  out.reserve(s.size() + 64);
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    // '<' '>' '&' occur only inside JSON strings, where \u escapes keep the same value.
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xe2' && i + 2 < s.size() && s[i + 1] == '\x80' && (s[i + 2] == '\xa8' || s[i + 2] == '\xa9'))
      out += s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029", i += 2;  // line separators end JS lines
    else out += c;
  }
  return out;
}

json html_data(const TraceReport& r) {
  Packer pk;
  TraceWriter w{pk, r, time_base(r)};
  json data = {{"v", 1}, {"kind", "trace"}, {"traces", json::array({w.trace()})}};
  pk.put(data);
  return data;
}

json html_job_data(const JobReport& j) {
  // Full details for the ranks that matter most (OOMs first, then the highest peaks).
  std::vector<size_t> order;
  for (size_t i = 0; i < j.ranks.size() && i < j.traces.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((j.ranks[a].ooms > 0) != (j.ranks[b].ooms > 0)) return j.ranks[a].ooms > 0;
    return j.ranks[a].peak_bytes > j.ranks[b].peak_bytes;
  });
  if (order.size() > kHtmlMaxRankDetails) order.resize(kHtmlMaxRankDetails);
  std::sort(order.begin(), order.end());
  std::vector<int> detail(j.ranks.size(), -1);
  Packer pk;
  json traces = json::array();
  for (size_t i : order) {
    detail[i] = int(traces.size());
    TraceWriter w{pk, j.traces[i], time_base(j.traces[i])};
    traces.push_back(w.trace());
  }
  json ranks = json::array();
  for (size_t i = 0; i < j.ranks.size(); ++i) {
    const RankRow& row = j.ranks[i];
    ranks.push_back({{"rank", row.rank}, {"pid", row.pid}, {"host", clean(row.host)}, {"path", clean(row.path)},
                     {"peak", row.peak_bytes}, {"leak", row.leak_bytes}, {"ooms", row.ooms},
                     {"verdict", clean(row.verdict)}, {"detail", detail[i]}});
  }
  json problems = json::array();
  for (const TraceProblem& p : job_problems(j))
    problems.push_back({{"path", clean(p.path)}, {"kind", p.unreadable ? "unreadable" : "damaged"}, {"message", clean(p.message)}});
  json data = {{"v", 1}, {"kind", "job"},
               {"job", {{"traces", j.traces.size()}, {"max", j.max_peak}, {"min", j.min_peak}, {"mean", j.mean_peak},
                        {"imbalance", j.imbalance}}},
               {"ranks", ranks}, {"traces", traces}, {"problems", problems}};
  pk.put(data);
  return data;
}

std::string report_html(const TraceReport& r) {
  std::string who = std::to_string(r.process.pid) + (r.process.hostname.empty() ? "" : "@" + r.process.hostname);
  return page("vramtrace: " + who + " " + command_line(r.process), html_data(r));
}

std::string job_html(const JobReport& j) {
  return page("vramtrace: job of " + std::to_string(j.traces.size()) + " traces", html_job_data(j));
}

}  // namespace vt::analyzer
