// See lookup_log.h. No descriptor is kept between lines (the program may close and reuse it):
// each line reopens the file by its absolute path, checks it is the same regular file as the
// first time (st_dev + st_ino), appends and closes. Debug-only, so the cost does not matter.
#include "lookup_log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "own_work.h"

namespace vt {

namespace {
enum State : int { kUnknown = 0, kOn = 1, kOff = 2 };
std::atomic<int> g_state{kUnknown};
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
char g_path[4096];
dev_t g_dev;
ino_t g_ino;

// The log file, or -1. O_NONBLOCK: a FIFO planted at the path must not block the program.
int open_log(bool first) {
  int fd = open(g_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | (first ? O_CREAT : 0), 0600);
  if (fd < 0) return -1;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (first || (st.st_dev == g_dev && st.st_ino == g_ino));
  if (ok && first) {
    g_dev = st.st_dev;
    g_ino = st.st_ino;
  }
  if (!ok) {
    close(fd);
    return -1;
  }
  return fd;
}

bool configure() {
  const char* path = getenv("VRAMTRACE_DEBUG_LOOKUPS");
  if (!path || !*path) return false;
  char cwd[2048];
  int w = path[0] == '/' || !getcwd(cwd, sizeof cwd) ? snprintf(g_path, sizeof g_path, "%s", path)
                                                      : snprintf(g_path, sizeof g_path, "%s/%s", cwd, path);
  return w > 0 && size_t(w) < sizeof g_path;
}
}  // namespace

void log_lookup(const char* symbol, int version, uint64_t flags, int result, void* returned) {
  if (g_state.load(std::memory_order_acquire) == kOff) return;
  Dl_info info{};
  const char* module = "-";
  const char* sym = "-";
  if (returned && dladdr(returned, &info)) {
    if (info.dli_fname) module = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
    if (info.dli_sname) sym = info.dli_sname;
  }
  char line[512];
  int n = snprintf(line, sizeof line, "%s %d %llu %d -> %s %s\n", symbol && *symbol ? symbol : "\"\"", version,
                   static_cast<unsigned long long>(flags), result, module, sym);
  if (n <= 0) return;
  OwnWork own(true);  // all signals blocked: a handler's own lookup cannot wait for g_mu here
  pthread_mutex_lock(&g_mu);
  int state = g_state.load(std::memory_order_relaxed);
  bool first = state == kUnknown;
  if (first && !configure()) {
    state = kOff;
  } else if (state != kOff) {
    int fd = open_log(first);
    if (fd >= 0) {
      (void)!write(fd, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
      close(fd);
      state = kOn;
    } else if (first) {
      state = kOff;
    }
  }
  g_state.store(state, std::memory_order_release);
  pthread_mutex_unlock(&g_mu);
}

void forget_lookup_log_lock() { pthread_mutex_init(&g_mu, nullptr); }

}  // namespace vt
