// See job_json_text.h.
#include "job_json_text.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "job_parallel.h"
#include "terminal_escape.h"

namespace vt::analyzer {

namespace {

// A report's JSON text two levels down (the job's object, its array): every line 4 spaces further in.
std::string indented(const std::string& one) {
  std::string out;
  out.reserve(one.size() + one.size() / 8);
  out += "    ";
  for (char c : one) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out;
}

}  // namespace

std::string job_json_part(const TraceReport& trace, Sections sections) {
  return indented(json_text(report_json(trace, sections), 2));
}

std::vector<std::string> job_json_text(JobReport& job, Sections sections, unsigned jobs) {
  // The job's JSON with its reports left out: "reports": [] is where they go (the one such
  // text: a string's quotes are escaped, and no other member is named so).
  std::string text = json_text(job_json(job, sections, /*reports=*/false), 2);
  const std::string slot = "\"reports\": []";
  const size_t at = text.find(slot);
  if (job.traces.empty() || at == std::string::npos) return {std::move(text)};
  std::vector<std::string> parts = std::move(job.rendered);
  job.rendered.clear();
  if (parts.size() != job.traces.size()) {  // not written by the analysis: written here
    parts.assign(job.traces.size(), std::string());
    for_each_parallel(parts.size(), jobs, [&](size_t i) {
      parts[i] = i < job.summaries.size() ? indented(json_text(nlohmann::json::parse(job.summaries[i]), 2))
                                          : job_json_part(job.traces[i], sections);
    });
  }
  // Left in pieces for the output to write one after another: joining them copied the whole text
  // (7 MB for 16 ranks of bench/gen_trace) after the workers, on one core.
  std::vector<std::string> pieces;
  pieces.reserve(2 * parts.size() + 1);
  pieces.push_back(text.substr(0, at) + "\"reports\": [\n");
  for (size_t i = 0; i < parts.size(); ++i) {
    pieces.push_back(std::move(parts[i]));
    pieces.push_back(i + 1 < parts.size() ? ",\n" : "\n");
  }
  pieces.back() += "  ]" + text.substr(at + slot.size());
  return pieces;
}

}  // namespace vt::analyzer
