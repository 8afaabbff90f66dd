// Rendering reports: JSON (docs/report-schema.md, stable and versioned) and text for people.
// A render covers a set of sections: the whole report (every section, and the parts that belong to
// none: timeline, snapshots, PyTorch's summary, kernels, allocation sizes), one section (`vramtrace
// peak|leaks|frag|oom`), or none (the header alone: summaries add their own figures).
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <utility>

#include "analysis.h"
#include "report_model.h"

namespace vt::analyzer {

inline constexpr const char* kReportSchema = "vramtrace.report/1";
inline constexpr const char* kSummarySchema = "vramtrace.summary/1";

// The sections of a report, in the order the text prints them. Each has one renderer per format:
// report_text.cpp's and report_json.cpp's tables, analyzer/html/sections.js's *Section functions.
enum class Section : uint8_t { peak, leaks, frag, oom };
struct SectionInfo {
  Section id;
  const char* name;  // its command (`vramtrace NAME`)
  const char* help;  // what that command prints
};
inline constexpr SectionInfo kSections[] = {
    {Section::peak, "peak", "the peak and who held it"},
    {Section::leaks, "leaks", "what was never freed, and what kept growing"},
    {Section::frag, "frag", "fragmentation of VMM reservations, pools and caches"},
    {Section::oom, "oom", "why each allocation failed, with remedies"},
};

// True when `table` has one renderer per section, in kSections' order (each format's table is
// checked with it at compile time: a new section without its renderer does not build).
template <class Renderer, size_t N>
constexpr bool in_section_order(const std::pair<Section, Renderer> (&table)[N]) {
  if (N != sizeof kSections / sizeof kSections[0]) return false;
  for (size_t i = 0; i < N; ++i)
    if (table[i].first != kSections[i].id) return false;
  return true;
}

// Which sections a render covers.
class Sections {
 public:
  static Sections whole() { return Sections(0xff, true); }
  static Sections only(Section s) { return Sections(uint8_t(1u << unsigned(s)), false); }
  static Sections none() { return Sections(0, false); }
  bool has(Section s) const { return bits_ & (1u << unsigned(s)); }
  bool is_whole() const { return whole_; }

 private:
  Sections(uint8_t bits, bool whole) : bits_(bits), whole_(whole) {}
  uint8_t bits_;
  bool whole_;
};

nlohmann::json report_json(const TraceReport& r, Sections sections = Sections::whole());
// `reports` false: "reports" is left an empty array (job/job_json_text.h writes them apart).
nlohmann::json job_json(const JobReport& j, Sections sections = Sections::whole(), bool reports = true);
// The lookup safety net's findings (report JSON `interception`, also in `vramtrace info`).
nlohmann::json interception_json(const InterceptionReport& x);
// `native`: every frame of every stack (--native); else the user's frames first, the interpreter,
// FFI, dispatcher, libc and vramtrace frames folded into one marker (user_frames.h).
std::string report_text(const TraceReport& r, Sections sections = Sections::whole(), bool native = false);
std::string job_text(const JobReport& j, Sections sections = Sections::whole(), bool native = false);
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
