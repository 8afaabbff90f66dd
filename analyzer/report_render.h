// Rendering reports: JSON (docs/report-schema.md, stable and versioned) and text for people.
// `section` limits the output to one part: "" (all), "peak", "leaks", "oom", "frag"; "none" gives
// the header alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis.h"
#include "report_model.h"

namespace vt::analyzer {

inline constexpr const char* kReportSchema = "vramtrace.report/1";
inline constexpr const char* kSummarySchema = "vramtrace.summary/1";

nlohmann::json report_json(const TraceReport& r, const std::string& section = "");
nlohmann::json job_json(const JobReport& j, const std::string& section = "");
// The lookup safety net's findings (report JSON `interception`, also in `vramtrace info`).
nlohmann::json interception_json(const InterceptionReport& x);
// `native`: every frame of every stack (--native); else the user's frames first, the interpreter,
// FFI, dispatcher, libc and vramtrace frames folded into one marker (user_frames.h).
std::string report_text(const TraceReport& r, const std::string& section = "", bool native = false);
std::string job_text(const JobReport& j, const std::string& section = "", bool native = false);
// The job's per-rank table and peak spread (the head of job_text).
std::string job_table_text(const JobReport& j);

// `vramtrace summary`: one screen per trace (report_summary.cpp); JSON schema vramtrace.summary/1.
std::string summary_text(const TraceReport& r, size_t top = 5);
std::string job_summary_text(const JobReport& j, size_t top = 5);
nlohmann::json summary_json(const TraceReport& r);
nlohmann::json job_summary_json(const JobReport& j);

// The top-level `problems` array: [{"path", "kind": "damaged"|"unreadable", "message"}].
nlohmann::json problems_json(const std::vector<TraceProblem>& v);

}  // namespace vt::analyzer
