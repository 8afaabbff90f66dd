// A job's JSON report as text, its per-trace reports written on several cores: serializing them
// was the job's serial tail (~10% of a 16-rank report, after the traces were analysed in
// parallel). Each report is written alone, indented to its place, and goes between the pieces of
// the job's own JSON: byte for byte what json_text(job_json(job), 2) writes, whatever `jobs` is.
#pragma once

#include <string>
#include <vector>

#include "report_render.h"

namespace vt::analyzer {

// One trace's report as it stands in the job's JSON (indented to its place in "reports"). The
// job's analysis can write these on its workers (AnalysisOptions::render, JobReport::rendered).
std::string job_json_part(const TraceReport& trace, Sections sections);

// The job's JSON text, in pieces to be written one after another. Each trace's part is taken from
// job.rendered where the analysis wrote them (with job_json_part and these sections; moved out,
// so that the text is never held twice), else written here on `jobs` threads.
std::vector<std::string> job_json_text(JobReport& job, Sections sections, unsigned jobs);

}  // namespace vt::analyzer
