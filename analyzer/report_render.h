// Rendering reports: JSON (docs/report-schema.md, stable and versioned) and text for people.
// `section` limits the output to one part: "" (all), "peak", "leaks", "oom", "frag".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis.h"
#include "report_model.h"

namespace vt::analyzer {

inline constexpr const char* kReportSchema = "vramtrace.report/1";

nlohmann::json report_json(const TraceReport& r, const std::string& section = "");
nlohmann::json job_json(const JobReport& j, const std::string& section = "");
// The lookup safety net's findings (report JSON `interception`, also in `vramtrace info`).
nlohmann::json interception_json(const InterceptionReport& x);
// `native`: every frame of every stack (--native); else the user's frames first, the interpreter,
// FFI, dispatcher, libc and vramtrace frames folded into one marker (user_frames.h).
std::string report_text(const TraceReport& r, const std::string& section = "", bool native = false);
std::string job_text(const JobReport& j, const std::string& section = "", bool native = false);

// The top-level `problems` array: [{"path", "kind": "damaged"|"unreadable", "message"}].
nlohmann::json problems_json(const std::vector<TraceProblem>& v);

}  // namespace vt::analyzer
