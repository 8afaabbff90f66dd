// See log.h.
#include "log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace vt {

void log_line(const char* fmt, ...) {
  int saved_errno = errno;
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "vramtrace: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : (m >= int(sizeof buf) - n - 1 ? sizeof buf - n - 2 : m));
  buf[len++] = '\n';
  for (size_t off = 0; off < len;) {
    ssize_t w = write(STDERR_FILENO, buf + off, len - off);
    if (w <= 0 && errno != EINTR) break;
    if (w > 0) off += w;
  }
  errno = saved_errno;
}

}  // namespace vt
