// See job_json_text.h.
#include "job_json_text.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "job_parallel.h"
#include "terminal_escape.h"

namespace vt::analyzer {

std::string job_json_text(const JobReport& job, Sections sections, unsigned jobs) {
  // The job's JSON with its reports left out: "reports": [] is where they go (the one such
  // text: a string's quotes are escaped, and no other member is named so).
  std::string text = json_text(job_json(job, sections, /*reports=*/false), 2);
  const std::string slot = "\"reports\": []";
  const size_t at = text.find(slot);
  if (job.traces.empty() || at == std::string::npos) return text;
  // Each report two levels down (the job's object, its array): every line 4 spaces further in.
  std::vector<std::string> parts(job.traces.size());
  for_each_parallel(parts.size(), jobs, [&](size_t i) {
    std::string one = json_text(i < job.summaries.size() ? nlohmann::json::parse(job.summaries[i])
                                                         : report_json(job.traces[i], sections),
                                2);
    std::string& out = parts[i];
    out.reserve(one.size() + one.size() / 8);
    out += "    ";
    for (char c : one) {
      out += c;
      if (c == '\n') out += "    ";
    }
  });
  std::string reports = "\"reports\": [\n";
  for (size_t i = 0; i < parts.size(); ++i) reports += parts[i] + (i + 1 < parts.size() ? ",\n" : "\n");
  reports += "  ]";
  text.replace(at, slot.size(), reports);
  return text;
}

}  // namespace vt::analyzer
