// The directory through which the processes of one `vramtrace run` say a line only once
// (common/log.h, log_line_once_per_run): made private before the command starts, removed
// with what is in it when the command has ended. Without /dev/shm there is none, and each
// process says its own lines.
#pragma once

#include <string>
#include <vector>

namespace vt::cli {

class RunOnceDir {
 public:
  explicit RunOnceDir(const std::string& session);
  ~RunOnceDir();
  RunOnceDir(const RunOnceDir&) = delete;
  RunOnceDir& operator=(const RunOnceDir&) = delete;
  // The notes the run's processes left (common/log.h, leave_run_note), sorted.
  std::vector<std::string> notes() const;

 private:
  std::string path_;  // empty when it could not be made
};

}  // namespace vt::cli
