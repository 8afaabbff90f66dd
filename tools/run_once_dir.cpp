// See run_once_dir.h.
#include "run_once_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "log.h"

namespace vt::cli {

namespace {

// Removes the directory `name` (in /dev/shm, open as `shm`) and what is in it.
void remove_once_dir(int shm, const char* name) {
  int fd = openat(shm, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (DIR* d = fd >= 0 ? fdopendir(fd) : nullptr) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') unlinkat(fd, e->d_name, 0);
    closedir(d);
  } else if (fd >= 0) {
    close(fd);
  }
  unlinkat(shm, name, AT_REMOVEDIR);
}

// The directories of runs that were killed (SIGKILL: no destructor ran) stayed for ever: each run
// removes those of ours whose `vramtrace run` (the pid ending the session id) no longer exists.
void sweep_dead_runs() {
  const char* prefix = ".vramtrace-run.";
  int shm = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = shm >= 0 ? fdopendir(dup(shm)) : nullptr;
  if (!d) {
    if (shm >= 0) close(shm);
    return;
  }
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    const char* dash = strrchr(e->d_name, '-');
    char* end = nullptr;
    long pid = dash ? strtol(dash + 1, &end, 10) : 0;
    struct stat st;
    if (pid <= 0 || !end || *end || fstatat(shm, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    if (kill(pid_t(pid), 0) != 0 && errno == ESRCH) remove_once_dir(shm, e->d_name);
  }
  closedir(d);
  close(shm);
}

}  // namespace

RunOnceDir::RunOnceDir(const std::string& session) {
  sweep_dead_runs();
  char p[128];
  if (snprintf(p, sizeof p, kOnceDirPattern, session.c_str()) >= int(sizeof p)) return;
  if (mkdir(p, 0700) == 0) path_ = p;  // an existing one is someone else's: not ours to use or remove
}

std::vector<std::string> RunOnceDir::notes() const {
  std::vector<std::string> out;
  if (path_.empty()) return out;
  DIR* d = opendir(path_.c_str());
  if (!d) return out;
  const size_t prefix = strlen(kRunNotePrefix);
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, kRunNotePrefix, prefix) != 0 || out.size() >= 16) continue;
    int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat st;
    char buf[4096];
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf) : -1;
    close(fd);
    if (n > 0) out.emplace_back(buf, size_t(n));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

RunOnceDir::~RunOnceDir() {
  if (path_.empty()) return;
  int shm = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (shm < 0) return;
  remove_once_dir(shm, path_.c_str() + strlen("/dev/shm/"));
  close(shm);
}

}  // namespace vt::cli
