// See lookup_log.h.
#include "lookup_log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vt {

namespace {
constexpr int kUnopened = -2;
std::atomic<int> g_fd{kUnopened};

int log_fd() {
  int fd = g_fd.load(std::memory_order_acquire);
  if (fd != kUnopened) return fd;
  const char* path = getenv("VRAMTRACE_DEBUG_LOOKUPS");
  int opened = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
  int expected = kUnopened;
  if (!g_fd.compare_exchange_strong(expected, opened) && opened >= 0) close(opened);
  return g_fd.load(std::memory_order_acquire);
}
}  // namespace

void log_lookup(const char* symbol, int version, uint64_t flags, int result, void* returned) {
  int fd = log_fd();
  if (fd < 0) return;
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
  if (n > 0) (void)!write(fd, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
}

}  // namespace vt
