// Turning traces into reports: one streaming pass over a trace (analysis_pass.h: the replay and
// the aggregators it feeds), then the groups are symbolized and every OOM judged (oom_verdict.h).
// A directory of traces (a multi-rank job, or a process and its children) gives a JobReport
// (job.cpp).
#pragma once

#include <string>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

// Analyses one trace. On failure returns false with one line in *error.
bool analyze_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out, std::string* error);

// analyze_trace in its three steps, for a job's workers (job/job_parallel.h schedules them):
// the replay (all but the stacks' names), then the symbolization (the report's stacks named, the
// OOMs judged), then the remedies' whatif runs. Between them a replayed trace keeps only its
// stacks, modules and threads (the reader, its file and mapping are gone).
struct ReplayedTrace {
  StackStore stacks;
};
bool replay_trace(const std::string& path, const AnalysisOptions& opt, ReplayedTrace* replayed, TraceReport* out,
                  std::string* error);
void symbolize_trace(const ReplayedTrace& replayed, const AnalysisOptions& opt, TraceReport* out);
void whatif_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out);

// Which entries of a directory are traces (docs/report-schema.md, "A job"): a name ending in
// ".trace" (or the writer's fallbacks "*.trace.<pid>", "*.trace.<pid>.<n>"), or a regular file
// that starts with the trace magic. Anything else (a README, a report, a subdirectory, a FIFO
// not named like a trace) is not part of the job and is passed over without being opened for
// more than its first 8 bytes, never blocking.
bool trace_file_name(const std::string& name);

// The traces of a directory by that rule, sorted by path; `why` is set for one that cannot even be
// opened as a regular file. False with one line in *error when the directory cannot be listed.
struct JobEntry {
  std::string path, why;
};
bool list_job_entries(const std::string& dir, std::vector<JobEntry>* out, std::string* error);

// Analyses every trace in a directory. A trace that cannot be read at all goes to
// out->unreadable (path, and the reason in `damage`); the others to out->traces. Returns false
// with one line in *error only when the directory cannot be listed or holds no trace at all.
// With opt.accept_summaries, a directory without traces may instead hold each rank's JSON
// report (analyze_summaries). opt.jobs traces are analysed at once; the result is the same.
bool analyze_job(const std::string& dir, const AnalysisOptions& opt, JobReport* out, std::string* error);

// A directory of per-rank summaries (`vramtrace report TRACE --format json`, one per rank, made
// on its own node: docs/scale.md) as a job: the rank table and the damage, from the summaries
// alone; out->summaries keeps each report for the JSON output (job_summaries.cpp). Returns the
// number of summaries found, 0 when the directory holds none, -1 with one line in *why when it
// cannot be listed. A file that says it is a report but is not a valid whole one (cut short, a
// one-section or job report) goes to out->unreadable with the reason, as an unreadable trace.
int analyze_summaries(const std::string& dir, JobReport* out, std::string* why);

// One row of the job table, and the job's max/min/mean/imbalance over job->ranks.
RankRow rank_row(const TraceReport& t);
void job_totals(JobReport* job);

// A trace file or a directory of traces: *is_job says which. A single trace that cannot be read
// is an error (false); a directory is analyze_job.
bool analyze_input(const std::string& path, const AnalysisOptions& opt, JobReport* out, bool* is_job, std::string* error);

// The damage of a job, one entry per sentence: every damaged trace of out.traces and every
// unreadable one. For stderr ("PATH: damaged: ..."), the JSON `problems` and the CI gate.
struct TraceProblem {
  std::string path;
  bool unreadable = false;  // not read at all (else: records were lost, the rest was read)
  std::string message;
};
std::vector<TraceProblem> job_problems(const JobReport& job);
// "PATH: unreadable: MESSAGE" or "PATH: damaged: MESSAGE (figures from it are lower bounds)"
// (not yet escaped for a terminal).
std::string problem_line(const TraceProblem& p);

}  // namespace vt::analyzer
