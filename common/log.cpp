// See log.h.
#include "log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

#include "own_work.h"

namespace vt {

namespace {

struct Identity {
  bool open = false;
  dev_t dev = 0;
  ino_t ino = 0;
};
Identity g_stderr;

// Runs before any other constructor of ours, and before the program's main.
__attribute__((constructor(101))) void remember_stderr() {
  int saved = errno;
  struct stat st;
  if (fstat(STDERR_FILENO, &st) == 0) g_stderr = {true, st.st_dev, st.st_ino};
  errno = saved;
}

// A private descriptor for the original stderr, or -1 when descriptor 2 is something else now.
// dup first, then check: the check is about the very file the line will be written to.
int original_stderr() {
  if (!g_stderr.open) return -1;
  int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != g_stderr.dev || st.st_ino != g_stderr.ino) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

void log_line(const char* fmt, ...) {
  OwnWork own;  // restores errno; no cancellation; SIGPIPE/SIGTTOU blocked, ours consumed
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "vramtrace: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : (m >= int(sizeof buf) - n - 1 ? sizeof buf - n - 2 : m));
  buf[len++] = '\n';
  if (own.was_pending(SIGPIPE)) return;  // ours would merge into the program's own: not told apart
  int fd = original_stderr();
  if (fd < 0) return;
  for (size_t off = 0; off < len;) {
    pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)) break;  // a full pipe: drop, never block
    ssize_t w = write(fd, buf + off, len - off);
    if (w <= 0 && errno != EINTR) break;
    if (w > 0) off += size_t(w);
  }
  close(fd);
}

}  // namespace vt
