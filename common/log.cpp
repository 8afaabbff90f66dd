// See log.h.
#include "log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "own_work.h"

namespace vt {

namespace {

struct Identity {
  bool open = false;
  dev_t dev = 0;
  ino_t ino = 0;
};
Identity g_stderr;

// A sandbox (seccomp) that denies fstat hides every file's identity: the check below cannot be
// made, and dropping the line would hide why tracing is off. Then descriptor 2 is trusted.
bool identity_hidden(int err) { return err == EPERM || err == EACCES || err == ENOSYS; }

bool same_as_stderr(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return identity_hidden(errno);
  return st.st_dev == g_stderr.dev && st.st_ino == g_stderr.ino;
}

// Runs before any other constructor of ours, and before the program's main.
__attribute__((constructor(101))) void remember_stderr() {
  int saved = errno;
  struct stat st;
  if (fstat(STDERR_FILENO, &st) == 0)
    g_stderr = {true, st.st_dev, st.st_ino};
  else if (identity_hidden(errno) && fcntl(STDERR_FILENO, F_GETFD) >= 0)
    g_stderr = {true, 0, 0};  // open, identity unknown
  errno = saved;
}

// A private descriptor for the original stderr, or -1 when descriptor 2 is something else now.
// dup first, then check: the check is about the very file the line will be written to.
int original_stderr(bool* borrowed) {
  *borrowed = false;
  if (!g_stderr.open) return -1;
  int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0 && errno == EMFILE) {  // no descriptor to spare (a program at its limit): descriptor 2
                                    // itself, when it still is the original stderr
    if (!same_as_stderr(STDERR_FILENO)) return -1;
    *borrowed = true;
    return STDERR_FILENO;
  }
  if (fd < 0) return -1;
  if (!same_as_stderr(fd)) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

namespace {

void write_line(const OwnWork& own, const char* text) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf - 1, "vramtrace: %s", text);
  size_t len = n < 0 ? 0 : (n >= int(sizeof buf) - 1 ? sizeof buf - 2 : size_t(n));
  buf[len++] = '\n';
  if (own.was_pending(SIGPIPE)) return;  // ours would merge into the program's own: not told apart
  bool borrowed = false;
  int fd = original_stderr(&borrowed);
  if (fd < 0) return;
  for (size_t off = 0; off < len;) {
    pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT)) break;  // a full pipe: drop, never block
    ssize_t w = write(fd, buf + off, len - off);
    if (w <= 0 && errno != EINTR) break;
    if (w > 0) off += size_t(w);
  }
  if (!borrowed) close(fd);
}

// This `vramtrace run`'s private directory (kOnceDirPattern) into dir[128]; false without one.
bool run_dir(char (&dir)[128]) {
  const char* session = getenv("VRAMTRACE_SESSION");
  size_t n = session ? strlen(session) : 0;
  bool plain = n > 0 && n < 64;
  for (size_t i = 0; plain && i < n; ++i)
    plain = (session[i] >= '0' && session[i] <= '9') || (session[i] >= 'a' && session[i] <= 'z') ||
            (session[i] >= 'A' && session[i] <= 'Z') || session[i] == '-';
  struct stat st;
  // Only run's own directory: ours, private, not a symlink.
  return plain && snprintf(dir, sizeof dir, kOnceDirPattern, session) < int(sizeof dir) && lstat(dir, &st) == 0 &&
         S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

// Claims the file `prefix` + FNV-1a of `text` in the run's directory, writing `text` into it when
// `keep`: false when another process claimed it first (or there is no directory).
bool claim_in_run(const char* prefix, const char* text, bool keep, bool* claimed_before) {
  char dir[128];
  *claimed_before = false;
  if (!run_dir(dir)) return false;
  uint64_t h = 1469598103934665603ull;
  for (const char* p = text; *p; ++p) h = (h ^ uint8_t(*p)) * 1099511628211ull;
  char name[180];
  snprintf(name, sizeof name, "%s/%s%016llx", dir, prefix, static_cast<unsigned long long>(h));
  int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *claimed_before = errno == EEXIST;
    return false;
  }
  if (keep) {
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    (void)w;
  }
  close(fd);
  return true;
}

// True when another process of this `vramtrace run` has already claimed `text`.
bool said_in_this_run(const char* text) {
  bool said = false;
  claim_in_run("", text, false, &said);
  return said;
}

}  // namespace

void log_line(const char* fmt, ...) {
  OwnWork own;  // restores errno; no cancellation; SIGPIPE/SIGTTOU blocked, ours consumed
  char text[1000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  write_line(own, text);
}

void leave_run_note(const char* text) {
  OwnWork own;
  bool before = false;
  claim_in_run(kRunNotePrefix, text, true, &before);
}

void log_line_once_per_run(const char* fmt, ...) {
  OwnWork own;
  char text[1000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (!said_in_this_run(text)) write_line(own, text);
}

}  // namespace vt
