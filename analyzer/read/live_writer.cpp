// See live_writer.h. A scan of /dev/shm's vramtrace entries of this user, each read without
// trusting it (inspect_shm_entry: regular file, no symlink, writer's lock, checked layout).
#include "live_writer.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "shm_layout.h"

namespace vt::analyzer {

bool trace_still_written(const std::string& trace_path) {
  char want[PATH_MAX];
  if (!realpath(trace_path.c_str(), want)) return false;
  DIR* d = opendir(format::kShmDir);
  if (!d) return false;
  bool found = false;
  while (dirent* ent = readdir(d)) {
    if (strncmp(ent->d_name, format::kShmPrefix, sizeof format::kShmPrefix - 1) != 0) continue;
    format::ShmSummary s;
    if (format::inspect_shm_entry(dirfd(d), ent->d_name, geteuid(), &s) != format::ShmState::kLive) continue;
    char path[sizeof s.trace_path + 1] = {};
    memcpy(path, s.trace_path, sizeof s.trace_path);
    char real[PATH_MAX];
    if (realpath(path, real) && strcmp(real, want) == 0) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

}  // namespace vt::analyzer
