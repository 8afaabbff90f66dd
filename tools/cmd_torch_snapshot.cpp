// `vramtrace export --torch-snapshot OUT TRACE`: the trace as PyTorch's memory snapshot
// (analyzer/export/torch_snapshot.h). TRACE a directory (a job): OUT is a directory (made, 0700, when it
// does not exist) and each trace becomes OUT/<its name without .trace>.pickle, one line each.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "analysis.h"
#include "commands.h"
#include "usage.h"
#include "torch_snapshot.h"

namespace vt::cli {

namespace {

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// One trace; false after one error line.
bool export_one(const std::string& trace, const std::string& out, const analyzer::TorchSnapshotOptions& opt) {
  std::string err;
  analyzer::TorchSnapshotStats stats;
  int rc = analyzer::export_torch_snapshot_file(trace, out, opt, &err, &stats);
  name_problems(trace, stats.problems, {});
  if (rc) error_line(err);
  return rc == 0;
}

}  // namespace

int torch_snapshot_command(const std::string& input, const std::string& output, const analyzer::TorchSnapshotOptions& opt) {
  if (!is_directory(input)) return export_one(input, output, opt) ? kExitOk : kExitUsage;
  std::vector<analyzer::JobEntry> entries;
  std::string err;
  if (!analyzer::list_job_entries(input, &entries, &err)) {
    error_line(err);
    return kExitUsage;
  }
  if (entries.empty()) {
    error_line(input + ": no vramtrace traces in this directory");
    return kExitUsage;
  }
  if (!is_directory(output) && mkdir(output.c_str(), 0700) != 0) {
    error_line("export: " + output + ": a job directory exports into a directory, which cannot be made: " + strerror(errno));
    return kExitUsage;
  }
  bool all = true;
  for (const analyzer::JobEntry& e : entries) {
    if (!e.why.empty()) {
      error_line(e.path + ": " + e.why);
      all = false;
      continue;
    }
    std::string name = e.path.substr(e.path.rfind('/') + 1);
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".trace") == 0) name.resize(name.size() - 6);
    std::string out = output + (output.back() == '/' ? "" : "/") + name + ".pickle";
    if (export_one(e.path, out, opt)) std::printf("%s\n", out.c_str());
    else all = false;
  }
  return all ? kExitOk : kExitUsage;
}

}  // namespace vt::cli
