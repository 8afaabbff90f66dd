// See report_html.h. This file turns the report into the page's data (the report JSON with the
// page's limits) and wraps it with the embedded style and script (analyzer/html/, compiled in by
// analyzer/html/embed.cmake).
#include "report_html.h"

#include "terminal_escape.h"
#include "utf8.h"

#include <algorithm>
#include <map>
#include <sys/random.h>

#include <cerrno>

#include "analysis.h"
#include "report_render.h"
#include "verdicts.h"

namespace vt::analyzer {

namespace html_assets {  // generated from analyzer/html/*.css, *.js: one string per file, in order
extern const char* const kCss[];
extern const size_t kCssCount;
extern const char* const kJs[];
extern const size_t kJsCount;
}  // namespace html_assets

namespace {

using nlohmann::json;

// Valid UTF-8 of at most about `max` bytes: invalid bytes become U+FFFD, a cut adds "…".
std::string clean(const std::string& s, size_t max = kHtmlMaxString) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 8);
  for (size_t i = 0; i < s.size();) {
    if (out.size() >= max) {
      out += "\xe2\x80\xa6";
      break;
    }
    uint32_t cp;
    size_t n = utf8_at(s, i, &cp);
    if (n) out.append(s, i, n), i += n;
    else out += "\xef\xbf\xbd", ++i;
  }
  return out;
}

// The page's data is the report JSON (report_json, job_json: docs/report-schema.md) with the
// page's limits applied in place: every string cleaned, lists cut at their key's limit, a timeline
// series halved by pairs (keeping the higher) until it fits, and what was cut recorded in
// `omitted` under the JSON pointer of the list (docs/report-schema.md, "The HTML page's data").
class PageLimits {
 public:
  explicit PageLimits(json* omitted) : omitted_(omitted) {}

  void apply(json& j, const std::string& ptr) {
    if (j.is_string()) {
      j = clean(j.get_ref<const std::string&>());
    } else if (j.is_array()) {
      for (size_t i = 0; i < j.size(); ++i) apply(j[i], ptr + "/" + std::to_string(i));
    } else if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        std::string at = ptr + "/" + it.key();
        if (it->is_array()) {
          if (it.key() == "points")
            thin(*it, at);
          else if (size_t max = limit(it.key()); it->size() > max)
            cut(*it, max, at, it.key() == "ooms");
        }
        apply(*it, at);
      }
    }
  }

 private:
  static size_t limit(const std::string& key) {
    static const std::map<std::string, size_t> kLimits = {
        {"live_set", kHtmlMaxGroups},        {"groups", kHtmlMaxGroups},        {"growth", kHtmlMaxGroups},
        {"top_holders", kHtmlMaxGroups},     {"grew_before", kHtmlMaxGroups},   {"other_processes", kHtmlMaxGroups},
        {"pools", kHtmlMaxGroups},           {"cache_flushes", kHtmlMaxGroups}, {"regions", kHtmlMaxGroups},
        {"phases", kHtmlMaxGroups},          {"running_kernels", kHtmlMaxGroups}, {"ooms", kHtmlMaxOoms},
        {"stack", kHtmlMaxFrames},           {"argv", kHtmlMaxArgs},            {"problems", kHtmlMaxProblems},
        {"damage", kHtmlMaxProblems},
        // PyTorch's view (docs/report-schema.md, "torch"): tensors by line, segments, outside PyTorch.
        {"holders", kHtmlMaxGroups},         {"segments", kHtmlMaxGroups},      {"outside", kHtmlMaxGroups},
        {"marks", kHtmlMaxGroups},
        // What escaped the hooks (a crafted trace may list any number).
        {"unhooked", kHtmlMaxGroups},        {"isolated_libraries", kHtmlMaxGroups},
    };
    auto it = kLimits.find(key);
    return it == kLimits.end() ? ~size_t(0) : it->second;
  }

  // Keeps the first `max` entries, or with `keep_last` the first max - 1 and the last (the OOMs: the
  // last failure is the one a program ended with); what the others add up to goes to omitted[at].
  void cut(json& list, size_t max, const std::string& at, bool keep_last) {
    const size_t from = keep_last ? max - 1 : max, to = keep_last ? list.size() - 1 : list.size();
    json left = {{"entries", to - from}};
    uint64_t bytes = 0, count = 0;
    bool has_bytes = false, has_count = false;
    std::map<std::string, uint64_t> verdicts;
    for (size_t i = from; i < to; ++i) {
      const json& e = list[i];
      if (!e.is_object()) continue;
      if (auto b = e.find("bytes"); b != e.end() && b->is_number_unsigned()) bytes += b->get<uint64_t>(), has_bytes = true;
      if (auto c = e.find("count"); c != e.end() && c->is_number_unsigned()) count += c->get<uint64_t>(), has_count = true;
      if (auto v = e.find("verdict"); v != e.end() && v->is_string()) verdicts[clean(v->get<std::string>())]++;
    }
    if (has_bytes) left["bytes"] = bytes;
    if (has_count) left["count"] = count;
    if (!verdicts.empty()) left["verdicts"] = verdicts;
    list.erase(list.begin() + std::ptrdiff_t(from), list.begin() + std::ptrdiff_t(to));
    (*omitted_)[at] = std::move(left);
  }

  // At most kHtmlMaxPoints [t, bytes] points: adjacent pairs merged, keeping the higher (the
  // analysis gives ~512; this only guards the page against a larger --timeline setting).
  void thin(json& points, const std::string& at) {
    const size_t before = points.size();
    auto bytes = [](const json& p) { return p.is_array() && p.size() == 2 && p[1].is_number_unsigned() ? p[1].get<uint64_t>() : 0; };
    while (points.size() > kHtmlMaxPoints) {
      json q = json::array();
      for (size_t i = 0; i < points.size(); i += 2)
        q.push_back(i + 1 < points.size() && bytes(points[i + 1]) > bytes(points[i]) ? points[i + 1] : points[i]);
      points = std::move(q);
    }
    if (points.size() < before) (*omitted_)[at] = {{"entries", before - points.size()}};
  }

  json* omitted_;
};

// The report JSON with the page's limits, and `omitted` (empty when nothing was cut).
json limited(json data) {
  json omitted = json::object();
  PageLimits(&omitted).apply(data, "");
  data["omitted"] = std::move(omitted);
  return data;
}

// The script nonce of the page's CSP. getrandom(2), not std::random_device: libstdc++'s uses
// arc4random, which would make the CLI need glibc 2.36 (README: 2.34 is the oldest supported).
std::string nonce() {
  unsigned char r[22] = {};
  for (size_t got = 0; got < sizeof r;) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n > 0) got += size_t(n);
    else if (errno != EINTR) break;
  }
  std::string n;
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (unsigned char c : r) n += a[c % 62];
  return n;
}

// Each OOM verdict's label, from the verdict table (verdicts.h): {"fragmentation": "...", ...}.
json verdict_labels() {
  json labels = json::object();
  for (const Verdict& v : verdicts()) labels[v.code] = v.label;
  return labels;
}

std::string page(const std::string& title, const json& data) {
  std::string n = nonce();
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
         "style-src 'unsafe-inline'; script-src 'nonce-" + n + "'\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"vramtrace\">\n";
  // The title is the one string of the page shown outside it (a tab, `-o -` on a terminal): its
  // control characters (ESC, C1, bidi) are spelled out, as on a terminal.
  out += "<title>" + html_escape(terminal_escape(title)) + "</title>\n<style>\n";
  for (size_t i = 0; i < html_assets::kCssCount; ++i) out += html_assets::kCss[i];
  out += "</style>\n</head>\n<body data-vt-status=\"loading\">\n";
  out += "<div id=\"vt-app\"><noscript><p>This report is drawn by JavaScript, which is disabled. Its data is "
         "embedded in this file as JSON (the script element with id vt-data); <code>vramtrace report "
         "--format json</code> gives the full report.</p></noscript></div>\n";
  out += "<div id=\"vt-tip\" hidden></div>\n<pre id=\"vt-errors\" hidden></pre>\n";
  out += "<script type=\"application/json\" id=\"vt-data\">";
  out += script_safe_json(data);
  out += "</script>\n<script nonce=\"" + n + "\">\n";
  out += "const VERDICT_TEXT = " + script_safe_json(verdict_labels()) + ";\n";  // format.js's verdictText
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
  // Strings are valid UTF-8 already (clean()); json_text also spells C1, DEL and bidi controls
  // as \u escapes (the page printed with -o - on a terminal is then as safe as the JSON).
  std::string s = json_text(j), out;
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

json html_data(const TraceReport& r) { return limited(report_json(r)); }

json html_job_data(const JobReport& j) {
  // Full reports for the ranks that matter most (OOMs first, then the highest peaks); the others
  // are null in `reports` (their rows stay in `ranks`).
  std::vector<size_t> order;
  for (size_t i = 0; i < j.ranks.size() && i < j.traces.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((j.ranks[a].ooms > 0) != (j.ranks[b].ooms > 0)) return j.ranks[a].ooms > 0;
    return j.ranks[a].peak_bytes > j.ranks[b].peak_bytes;
  });
  if (order.size() > kHtmlMaxRankDetails) order.resize(kHtmlMaxRankDetails);
  std::vector<bool> keep(j.traces.size(), false);
  for (size_t i : order) keep[i] = true;
  json data = job_json(j);
  json& reports = data["reports"];
  for (size_t i = 0; i < reports.size(); ++i)
    if (i >= keep.size() || !keep[i]) reports[i] = nullptr;
  return limited(std::move(data));
}

std::string report_html(const TraceReport& r) {
  std::string who = std::to_string(r.process.pid) + (r.process.hostname.empty() ? "" : "@" + r.process.hostname);
  return page("vramtrace: " + who + " " + command_line(r.process), html_data(r));
}

std::string job_html(const JobReport& j) {
  return page("vramtrace: job of " + std::to_string(j.traces.size()) + " traces", html_job_data(j));
}

}  // namespace vt::analyzer
