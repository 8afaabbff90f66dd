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

std::string job_json_text(JobReport& job, Sections sections, unsigned jobs) {
  // The job's JSON with its reports left out: "reports": [] is where they go (the one such
  // text: a string's quotes are escaped, and no other member is named so).
  std::string text = json_text(job_json(job, sections, /*reports=*/false), 2);
  const std::string slot = "\"reports\": []";
  const size_t at = text.find(slot);
  if (job.traces.empty() || at == std::string::npos) return text;
  std::vector<std::string> parts = std::move(job.rendered);
  job.rendered.clear();
  if (parts.size() != job.traces.size()) {  // not written by the analysis: written here
    parts.assign(job.traces.size(), std::string());
    for_each_parallel(parts.size(), jobs, [&](size_t i) {
      parts[i] = i < job.summaries.size() ? indented(json_text(nlohmann::json::parse(job.summaries[i]), 2))
                                          : job_json_part(job.traces[i], sections);
    });
  }
  // Spliced into one buffer sized once (a byte more for the caller's final newline): building the
  // array apart, then replacing the slot, then adding the newline copied the whole text (7 MB
  // for 16 ranks of bench/gen_trace) three to four times, after the workers, on one core.
  const std::string open = "\"reports\": [\n", close = "  ]";
  size_t size = text.size() - slot.size() + open.size() + close.size() + 1;
  for (const std::string& p : parts) size += p.size() + 2;
  std::string all;
  all.reserve(size);
  all.append(text, 0, at);
  all += open;
  for (size_t i = 0; i < parts.size(); ++i) {
    all += parts[i];
    all += i + 1 < parts.size() ? ",\n" : "\n";
    std::string().swap(parts[i]);  // (freed as it goes: the job's text is not held twice)
  }
  all += close;
  all.append(text, at + slot.size(), std::string::npos);
  return all;
}

}  // namespace vt::analyzer
