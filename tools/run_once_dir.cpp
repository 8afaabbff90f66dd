// See run_once_dir.h.
#include "run_once_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "log.h"

namespace vt::cli {

RunOnceDir::RunOnceDir(const std::string& session) {
  char p[128];
  if (snprintf(p, sizeof p, kOnceDirPattern, session.c_str()) >= int(sizeof p)) return;
  if (mkdir(p, 0700) == 0) path_ = p;  // an existing one is someone else's: not ours to use or remove
}

RunOnceDir::~RunOnceDir() {
  if (path_.empty()) return;
  int fd = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') unlinkat(fd, e->d_name, 0);
    closedir(d);
  } else if (fd >= 0) {
    close(fd);
  }
  rmdir(path_.c_str());
}

}  // namespace vt::cli
