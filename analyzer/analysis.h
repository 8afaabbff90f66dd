// Turning traces into reports: one streaming pass over a trace (LiveState replays it; this file
// tracks peaks, the timeline, growth checkpoints, failed allocations and cache flushes), then
// the groups are symbolized and every OOM judged (oom_verdict.h). A directory of traces (a
// multi-rank job, or a process and its children) gives a JobReport.
#pragma once

#include <string>

#include "report_model.h"

namespace vt::analyzer {

// Analyses one trace. On failure returns false with one line in *error.
bool analyze_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out, std::string* error);

// Analyses every trace in a directory (files whose header is a vramtrace trace).
bool analyze_job(const std::string& dir, const AnalysisOptions& opt, JobReport* out, std::string* error);

}  // namespace vt::analyzer
