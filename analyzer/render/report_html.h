// The HTML report: one self-contained file (inline style and script, no network access, works
// opened from disk) rendering a TraceReport or a JobReport: header, zoomable timeline, the peak
// as an icicle graph, leaks, OOM verdicts, fragmentation, and for a job the per-rank table.
//
// Safety: trace strings (function names, paths, argv, host names) reach the page only as JSON
// inside <script type="application/json">, with every '<', '>' and '&' written as \u003c etc.,
// so no "</script" or "<!--" can close or confuse the element; the page's script builds the DOM
// with textContent and setAttribute only. A Content-Security-Policy (per-page nonce,
// default-src 'none') backs this up and keeps the page off the network.
//
// Data: the page embeds the report JSON (docs/report-schema.md: `report --format json`, or the
// job's) with the page's limits below applied and what they cut summed up in `omitted`
// (docs/report-schema.md, "The HTML page's data"); the page's script reads those fields.
// Size: the page's data is bounded whatever the trace: groups per list, OOMs, frames per stack,
// timeline points, ranks with full reports and string lengths are capped.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "report_model.h"

namespace vt::analyzer {

std::string report_html(const TraceReport& r);
std::string job_html(const JobReport& j);

// What report_html and job_html embed: report_json(r) / job_json(j) with the page's limits.
nlohmann::json html_data(const TraceReport& r);
nlohmann::json html_job_data(const JobReport& j);

// Limits of the embedded data (each cut is summed up in `omitted`).
inline constexpr size_t kHtmlMaxGroups = 200;     // per list (live set, leaks, holders, pools, regions, ...)
inline constexpr size_t kHtmlMaxOoms = 50;        // per trace, the first 49 and the last
inline constexpr size_t kHtmlMaxFrames = 128;     // per stack, the innermost ones
inline constexpr size_t kHtmlMaxArgs = 256;       // argv entries
inline constexpr size_t kHtmlMaxProblems = 100;   // damage notes per list
inline constexpr size_t kHtmlMaxPoints = 4096;    // per timeline series
inline constexpr size_t kHtmlMaxRankDetails = 64; // ranks of a job whose full report is embedded
inline constexpr size_t kHtmlMaxString = 4096;    // bytes per string (valid UTF-8, cut on a boundary, then "…")

// Text for HTML content or a quoted attribute: & < > " ' escaped, invalid UTF-8 replaced.
std::string html_escape(const std::string& s);
// JSON text that is safe inside a <script> element: '<', '>', '&', U+2028 and U+2029 written
// as \u escapes (still the same JSON value).
std::string script_safe_json(const nlohmann::json& j);

}  // namespace vt::analyzer
