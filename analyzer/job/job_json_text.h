// A job's JSON report as text, its per-trace reports written on several cores: serializing them
// was the job's serial tail (~10% of a 16-rank report, after the traces were analysed in
// parallel). Each report is written alone, indented to its place, and spliced into the job's
// own JSON, byte for byte what json_text(job_json(job), 2) writes, whatever `jobs` is.
#pragma once

#include <string>

#include "report_render.h"

namespace vt::analyzer {

std::string job_json_text(const JobReport& job, Sections sections, unsigned jobs);

}  // namespace vt::analyzer
