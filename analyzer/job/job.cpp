// A directory of traces (a multi-rank job, or a process and its children): which entries are
// traces, each analysed (analysis.cpp; several at once with -j: job_parallel.h), the ranks
// compared, the damage listed; a directory of per-rank summaries instead: job_summaries.cpp.
// See analysis.h.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "analysis.h"
#include "job_parallel.h"
#include "regular_file.h"

namespace vt::analyzer {

bool trace_file_name(const std::string& name) {
  auto ends_with = [&](const char* suffix) {
    size_t n = strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  if (ends_with(".trace")) return true;
  // The writer's fallbacks when the configured file exists: <path>.<pid> and <path>.<pid>.<n>.
  size_t at = name.rfind(".trace.");
  if (at == std::string::npos || at + 7 == name.size()) return false;
  bool dot = true;  // no empty component
  for (size_t i = at + 7; i < name.size(); ++i) {
    if (name[i] == '.') {
      if (dot) return false;
      dot = true;
    } else if (name[i] >= '0' && name[i] <= '9') {
      dot = false;
    } else {
      return false;
    }
  }
  return !dot;
}

namespace {

// Whether a directory entry is a trace; when named like one but not a regular file, *why says
// what it is instead.
bool trace_entry(const std::string& path, const std::string& name, std::string* why) {
  bool named = trace_file_name(name);
  int fd = open_regular_file(path, why);
  if (fd < 0) return named;  // named like a trace: reported as unreadable; otherwise not ours
  char magic[sizeof format::kFileMagic] = {};
  ssize_t n = pread(fd, magic, sizeof magic, 0);
  close(fd);
  why->clear();
  return named || (n == ssize_t(sizeof magic) && memcmp(magic, format::kFileMagic, sizeof magic) == 0);
}

}  // namespace

bool list_job_entries(const std::string& dir, std::vector<JobEntry>* out, std::string* error) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *error = dir + ": cannot open directory: " + strerror(errno);
    return false;
  }
  out->clear();
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    JobEntry en{dir + (dir.empty() || dir.back() != '/' ? "/" : "") + name, {}};
    if (trace_entry(en.path, name, &en.why)) out->push_back(std::move(en));
  }
  closedir(d);
  std::sort(out->begin(), out->end(), [](const JobEntry& a, const JobEntry& b) { return a.path < b.path; });
  return true;
}

bool analyze_job(const std::string& dir, const AnalysisOptions& opt, JobReport* out, std::string* error) {
  using Entry = JobEntry;
  std::vector<Entry> entries;
  if (!list_job_entries(dir, &entries, error)) return false;
  if (entries.empty()) {
    if (opt.accept_summaries) {  // no traces: per-rank JSON summaries made on each rank's node?
      std::string why;
      int found = analyze_summaries(dir, out, &why);
      if (found > 0) return true;
      if (found < 0) {
        *error = why;
        return false;
      }
    }
    *error = dir + ": no vramtrace traces in this directory (files named *.trace or starting with the trace magic)" +
             (opt.accept_summaries ? std::string(", nor per-rank summaries (vramtrace report TRACE --format json)") : "");
    return false;
  }
  JobReport& job = *out;
  job = JobReport{};
  // Each trace on its own (on opt.jobs threads, job_parallel.h), into its own slot; the job is
  // then assembled in path order, so the result does not depend on the number of threads.
  std::vector<TraceReport> reps(entries.size());
  std::vector<std::string> errs(entries.size());
  std::vector<char> ok(entries.size(), 0);
  AnalysisOptions each = opt;
  if (opt.jobs > 1) each.progress = false;  // one line per trace would overwrite each other
  // In analyze_trace's steps, so that the workers take turns to symbolize (job_parallel.h);
  // a replayed trace keeps its stacks until it is symbolized.
  std::vector<ReplayedTrace> replayed(entries.size());
  std::vector<std::string> rendered(opt.render ? entries.size() : 0);
  TraceSteps steps;
  steps.replay = [&](size_t i) {
    const Entry& en = entries[i];
    errs[i] = en.why.empty() ? std::string() : en.path + ": " + en.why;
    ok[i] = errs[i].empty() && replay_trace(en.path, each, &replayed[i], &reps[i], &errs[i]);
    return bool(ok[i]);
  };
  steps.symbolize = [&](size_t i) {
    symbolize_trace(replayed[i], each, &reps[i]);
    replayed[i] = ReplayedTrace{};  // its stacks are no longer needed
  };
  steps.after = [&](size_t i) { whatif_trace(entries[i].path, each, &reps[i]); };
  if (opt.render) steps.render = [&](size_t i) { rendered[i] = opt.render(reps[i]); };
  for_each_trace_parallel(entries.size(), opt.jobs, steps);
  std::vector<size_t> readable;  // in path order
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& en = entries[i];
    TraceReport& rep = reps[i];
    if (!ok[i]) {
      std::string& err = errs[i];
      rep = TraceReport{};
      rep.path = en.path;
      // The reader's errors start with the path; the job's own lines name it separately.
      if (err.compare(0, en.path.size() + 2, en.path + ": ") == 0) err.erase(0, en.path.size() + 2);
      rep.problems = rep.damage = {err};
      rep.unreadable = rep.partial = true;
      job.unreadable.push_back(std::move(rep));
      continue;
    }
    readable.push_back(i);
  }
  std::stable_sort(readable.begin(), readable.end(), [&](size_t a, size_t b) {
    const ProcessInfo &pa = reps[a].process, &pb = reps[b].process;
    return pa.rank != pb.rank ? pa.rank < pb.rank : pa.pid < pb.pid;
  });
  for (size_t i : readable) {
    job.traces.push_back(std::move(reps[i]));
    if (opt.render) job.rendered.push_back(std::move(rendered[i]));
  }
  for (const TraceReport& t : job.traces) job.ranks.push_back(rank_row(t));
  job_totals(&job);
  return true;
}

RankRow rank_row(const TraceReport& t) {
  RankRow row;
  row.rank = t.process.rank;
  row.pid = t.process.pid;
  row.host = t.process.hostname;
  row.path = t.path;
  row.peak_bytes = t.peaks.empty() ? 0 : t.peaks[0].bytes;
  row.leak_bytes = t.leak_bytes;
  row.ooms = t.oom_count();
  if (!t.ooms.empty()) row.verdict = t.ooms[0].verdict;
  row.damaged = t.damaged();
  for (const std::string& arg : t.process.argv) row.command += (row.command.empty() ? "" : " ") + arg;
  row.end = t.end;
  return row;
}

void job_totals(JobReport* job) {
  uint64_t sum = 0;
  job->min_peak = job->ranks.empty() ? 0 : ~0ull;
  for (const RankRow& row : job->ranks) {
    sum += row.peak_bytes;
    job->max_peak = std::max(job->max_peak, row.peak_bytes);
    job->min_peak = std::min(job->min_peak, row.peak_bytes);
  }
  job->mean_peak = job->ranks.empty() ? 0 : sum / job->ranks.size();
  job->imbalance = job->mean_peak ? double(job->max_peak) / double(job->mean_peak) : 0;
}

bool analyze_input(const std::string& path, const AnalysisOptions& opt, JobReport* out, bool* is_job, std::string* error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  *is_job = S_ISDIR(st.st_mode);
  if (*is_job) return analyze_job(path, opt, out, error);
  *out = JobReport{};
  out->traces.resize(1);
  if (!analyze_trace(path, opt, &out->traces[0], error)) return false;
  const TraceReport& t = out->traces[0];
  out->max_peak = out->min_peak = out->mean_peak = t.peaks.empty() ? 0 : t.peaks[0].bytes;
  return true;
}

std::vector<TraceProblem> job_problems(const JobReport& job) {
  std::vector<TraceProblem> out;
  for (const TraceReport& t : job.traces)
    for (const std::string& m : t.damage) out.push_back({t.path, false, m});
  for (const TraceReport& t : job.unreadable)
    for (const std::string& m : t.damage) out.push_back({t.path, true, m});
  return out;
}

std::string problem_line(const TraceProblem& p) {
  return p.path + (p.unreadable ? ": unreadable: " + p.message
                                : ": damaged: " + p.message + " (figures from this trace are lower bounds)");
}

}  // namespace vt::analyzer
