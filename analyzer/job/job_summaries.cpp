// A job from per-rank summaries instead of traces (docs/scale.md): each rank's node ran
// `vramtrace report TRACE --format json -o rankN.json` on its own trace, and the summaries were
// gathered in one directory. Owns reading them back: which files are summaries, checking each
// before trusting it, and turning it into what the job table needs (rank_row, job_totals in
// job.cpp), so the table is the one the traces themselves would give. See analysis.h.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>

#include "analysis.h"
#include "regular_file.h"
#include "report_render.h"

namespace vt::analyzer {

namespace {

using nlohmann::json;

// A report is KB to a few MB; its JSON held in memory takes ~20x its size, so a bigger file is
// refused before it is read.
constexpr off_t kMaxSummaryBytes = off_t(64) << 20;
// A report nests a dozen levels; far deeper is not one of ours (and serializing it again, which
// recurses per level, would run out of stack).
constexpr int kMaxSummaryDepth = 64;

// How deep `text`'s arrays and objects nest (strings skipped), stopping once past `limit`.
int nesting(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

bool read_file(const std::string& path, std::string* text, std::string* why) {
  struct stat st;
  int fd = open_regular_file(path, why, kFollow, &st);
  if (fd < 0) return false;
  if (st.st_size > kMaxSummaryBytes) {
    close(fd);
    *why = "larger than 64 MiB: not a report";
    return false;
  }
  text->clear();
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      *why = std::string("cannot read: ") + strerror(errno);
      close(fd);
      return false;
    }
    text->append(buf, size_t(n));
  }
  close(fd);
  return true;
}

// The parts of one rank's report the job needs, checked; throws json::exception (caught by the
// caller) when a field has the wrong type.
bool summary_report(const json& j, TraceReport* t, std::string* why) {
  if (j.contains("job")) {
    *why = "a job report, not one rank's (make one per trace: vramtrace report TRACE --format json)";
    return false;
  }
  for (const char* key : {"trace", "peak", "leaks", "ooms"})
    if (!j.contains(key)) {
      *why = std::string("no \"") + key + "\": make it with the whole report (vramtrace report TRACE --format json)";
      return false;
    }
  const json& tr = j.at("trace");
  t->path = tr.at("path").get<std::string>();
  t->process.pid = tr.at("pid").get<uint64_t>();
  t->process.rank = tr.at("rank").get<int>();
  t->process.hostname = tr.at("hostname").get<std::string>();
  t->partial = tr.at("partial").get<bool>();
  t->problems = tr.at("problems").get<std::vector<std::string>>();
  t->damage = tr.at("damage").get<std::vector<std::string>>();
  uint64_t peak = j.at("peak").at("bytes").get<uint64_t>();
  if (peak) t->peaks.push_back(DevicePeak{});
  if (peak) t->peaks[0].bytes = peak;
  t->leak_bytes = j.at("leaks").at("bytes").get<uint64_t>();
  t->end = j.at("leaks").at("end").get<std::string>();  // the job table's end and command columns
  if (tr.contains("argv")) t->process.argv = tr.at("argv").get<std::vector<std::string>>();
  for (const json& o : j.at("ooms")) {
    OomReport r;
    r.verdict = o.at("verdict").get<std::string>();
    t->ooms.push_back(std::move(r));
  }
  if (j.contains("ooms_omitted")) t->ooms_omitted = j.at("ooms_omitted").get<uint64_t>();
  return true;
}

}  // namespace

int analyze_summaries(const std::string& dir, JobReport* out, std::string* why) {
  why->clear();
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *why = dir + ": cannot open directory: " + strerror(errno);
    return -1;
  }
  std::vector<std::string> paths;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
      paths.push_back(dir + (dir.empty() || dir.back() != '/' ? "/" : "") + name);
  }
  closedir(d);
  std::sort(paths.begin(), paths.end());
  JobReport job;
  std::vector<TraceReport> reps;
  std::vector<std::string> texts;
  for (const std::string& path : paths) {
    std::string text, err;
    json j;
    bool ok = read_file(path, &text, &err);
    if (ok && nesting(text, kMaxSummaryDepth) > kMaxSummaryDepth) {
      ok = false;
      err = "nested more than " + std::to_string(kMaxSummaryDepth) + " deep: not a vramtrace report";
    } else if (ok) {
      j = json::parse(text, nullptr, false);
      // Another program's JSON is not ours to judge: only a file that says it is a vramtrace
      // report (or that cannot even be parsed: a summary cut short) is part of the job.
      if (!j.is_discarded() && !(j.is_object() && j.contains("schema") && j["schema"] == kReportSchema)) continue;
      if (j.is_discarded()) {
        ok = false;
        err = "not valid JSON (a summary cut short?)";
      }
    }
    TraceReport t;
    if (ok) {
      try {
        ok = summary_report(j, &t, &err);
      } catch (const json::exception& e) {
        ok = false;
        err = std::string("not a valid vramtrace report: ") + e.what();
      }
    }
    if (!ok) {
      TraceReport bad;
      bad.path = path;
      bad.problems = bad.damage = {err};
      bad.unreadable = bad.partial = true;
      job.unreadable.push_back(std::move(bad));
      continue;
    }
    reps.push_back(std::move(t));
    texts.push_back(j.dump());  // compact; the JSON output re-indents it
  }
  if (reps.empty() && job.unreadable.empty()) return 0;
  // The traces' order: by rank, then pid, ties in file order (analyze_job's rule).
  std::vector<size_t> order(reps.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ProcessInfo &x = reps[a].process, &y = reps[b].process;
    return x.rank != y.rank ? x.rank < y.rank : x.pid < y.pid;
  });
  for (size_t i : order) {
    job.ranks.push_back(rank_row(reps[i]));
    job.traces.push_back(std::move(reps[i]));
    job.summaries.push_back(std::move(texts[i]));
  }
  job_totals(&job);
  *out = std::move(job);
  return int(out->traces.size() + out->unreadable.size());
}

}  // namespace vt::analyzer
