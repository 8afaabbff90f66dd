// See trace_file.h.
#include "trace_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "env_config.h"
#include "file_header.h"
#include "shm_layout.h"
#include "log.h"
#include "own_work.h"

namespace vt {

std::atomic<uint8_t*> TraceFile::windows_[TraceFile::kMaxWindows];

namespace {

// Whether an existing file at `path` is a trace whose writer is gone: ours by its header, written
// on this host and in this pid namespace (else its pid means nothing here: a live writer in a
// container that shares the directory would lose its file), by a pid that no longer runs. Never
// blocks: a FIFO swapped in after the caller's lstat is opened non-blocking and then refused.
bool stale_trace(const char* path) {
  int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  format::FileHeader h;
  uint64_t size = 0;
  bool ours = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && format::is_vramtrace_header(format::read_header(fd, &h, &size));
  ::close(fd);
  if (!ours || h.pid == 0) return false;
  char host[sizeof h.hostname] = {};
  gethostname(host, sizeof host - 1);
  if (strncmp(host, h.hostname, sizeof host) != 0) return false;
  if (h.pid_namespace && h.pid_namespace != format::pid_namespace_id()) return false;
  return kill(pid_t(h.pid), 0) != 0 && errno != EPERM;
}

int read_rank(const char* const* names) {
  for (const char* const* n = names; *n; ++n) {
    const char* v = getenv(*n);
    if (v && *v) {
      char* end;
      long r = strtol(v, &end, 10);
      if (*end == '\0' && r >= 0 && r < (1l << 30)) return int(r);
    }
  }
  return -1;
}

const char* kind_of(mode_t m) {
  return S_ISCHR(m) ? "character device" : S_ISBLK(m) ? "block device" : S_ISFIFO(m) ? "FIFO" : S_ISSOCK(m) ? "socket" : "special file";
}

// `path` made absolute against the current directory, so a later chdir cannot lose the file
// (load_config already resolved a relative output against the directory the program started in,
// load_environment.h: this is for a start directory that was not known).
void absolute(const char* path, char* out, size_t cap) {
  static char cwd[4096];  // (create_file's: under the session's open lock)
  if (path[0] != '/' && getcwd(cwd, sizeof cwd)) {
    int w = snprintf(out, cap, "%s/%s", cwd, path[0] == '.' && path[1] == '/' ? path + 2 : path);
    if (w > 0 && size_t(w) < cap) return;
  }
  snprintf(out, cap, "%s", path);  // already absolute, or no usable cwd: the identity check still holds
}

// A descriptor near the top of the usual range (close-on-exec), where a program that opens its
// own files will not meet it; `fd` itself if there is no room there.
int out_of_the_way(int fd) {
  struct rlimit lim;
  rlim_t top = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
  if (top > 1024) top = 1024;  // higher would make the kernel grow the descriptor table
  if (top < 16) return fd;     // (a limit of 16 or more: halfway up, clear of the program's first ones)
  int high = fcntl(fd, F_DUPFD_CLOEXEC, int(top >= 128 ? top - 64 : top / 2));
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

bool same_file(const struct stat& st, dev_t dev, ino_t ino) {
  return S_ISREG(st.st_mode) && st.st_dev == dev && st.st_ino == ino;
}

}  // namespace

int TraceFile::owned_fd(struct stat* st) {
  if (fd_ >= 0) {
    if (fstat(fd_, st) == 0 && same_file(*st, dev_, ino_)) return fd_;
    fd_ = -1;  // closed, or now one of the program's files: never touched again
  }
  int fd = ::open(path_, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !same_file(*st, dev_, ino_)) {
    ::close(fd);
    errno = ESTALE;  // "a different file is at the trace's path now"
    return -1;
  }
  fd_ = out_of_the_way(fd);
  return fd_;
}

void TraceFile::stop(const char* fmt, const char* arg) {
  failed_.store(true);
  if (header_) __atomic_or_fetch(&header_->flags, format::kHeaderTracingFailed, __ATOMIC_RELEASE);
  log_line(fmt, path_, arg);
}

bool TraceFile::create_file(const char* path, long pid) {
  // Candidates: the configured path, then <path>.<pid>, <path>.<pid>.1, ... The configured path
  // is replaced only when it holds a trace of a process that is gone; a live owner (a parent,
  // or this very pid before an exec) keeps its file. O_EXCL|O_NOFOLLOW: never through a symlink.
  // (static: called once per trace, under the session's open lock; 8 KiB off the stack of the
  // thread whose first memory call opens the trace)
  static char base[sizeof path_], candidate[sizeof path_];
  absolute(path, base, sizeof base);
  int replaced = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    int w = attempt == 0   ? snprintf(candidate, sizeof candidate, "%s", base)
            : attempt == 1 ? snprintf(candidate, sizeof candidate, "%s.%ld", base, pid)
                           : snprintf(candidate, sizeof candidate, "%s.%ld.%d", base, pid, attempt - 1);
    if (w < 0 || size_t(w) >= sizeof candidate) break;
    int fd = ::open(candidate, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) != 0) {  // (denied by a sandbox: no identity to check the file by later)
        int err = errno;
        ::close(fd);
        unlink(candidate);  // ours, just made: an empty file would only confuse
        errno = err;
        break;
      }
      dev_ = st.st_dev;
      ino_ = st.st_ino;
      fd_ = out_of_the_way(fd);
      memcpy(path_, candidate, sizeof path_);
      return true;
    }
    if (errno != EEXIST) break;
    struct stat st;
    if (lstat(candidate, &st) != 0) break;
    if (S_ISLNK(st.st_mode)) {
      log_line("refusing to write the trace through the symlink %s; tracing off", candidate);
      return false;
    }
    if (attempt == 0 && !S_ISREG(st.st_mode)) {  // /dev/full, /dev/null, a FIFO: never <path>.<pid> next to it
      log_line("the trace output %s is a %s, not a directory or a regular file; tracing off", candidate,
               kind_of(st.st_mode));
      return false;
    }
    if (S_ISREG(st.st_mode) && stale_trace(candidate) && replaced++ < 4) {
      // A stale trace of an earlier run: replace it (O_EXCL again, so a racing symlink loses).
      if (unlink(candidate) != 0) break;
      --attempt;
      continue;
    }
  }
  snprintf(path_, sizeof path_, "%s", path);
  log_line("cannot create trace file %s: %s; tracing off", path_, strerror(errno));
  return false;
}

bool TraceFile::open(const Config& cfg, long pid, long ppid) {
  if (!create_file(cfg.path, pid)) return false;
  uint8_t* w0 = window(0);
  if (!w0) {
    struct stat st;
    if (owned_fd(&st) >= 0) {
      ::close(fd_);
      unlink(path_);  // an empty file would only confuse
    }
    fd_ = -1;
    return false;
  }
  header_ = reinterpret_cast<format::FileHeader*>(w0);
  format::FileHeader& h = *header_;
  memcpy(h.magic, format::kFileMagic, sizeof h.magic);
  h.version_major = format::kVersionMajor;
  h.version_minor = format::kVersionMinor;
  h.header_size = format::kFileHeaderSize;
  h.chunk_size = format::kChunkSize;
  h.pid = uint64_t(pid);
  h.ppid = uint64_t(ppid);
  h.start_realtime_ns = realtime_ns();
  h.start_monotonic_ns = now_ns();
  static const char* const kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                                      nullptr};
  static const char* const kLocal[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                       nullptr};
  h.rank = read_rank(kRank);
  h.local_rank = read_rank(kLocal);
  snprintf(h.session, sizeof h.session, "%s", cfg.session);
  gethostname(h.hostname, sizeof h.hostname - 1);
  h.pid_namespace = format::pid_namespace_id();
  return true;
}

// A full window's pages stayed in the process's memory for its whole life (8.6 bytes per event: 82
// MiB at 10 M events). When window `index` is added, the one kKeptWindows behind it leaves the
// process: MADV_DONTNEED on a shared file mapping only drops our page-table entries (the data is
// the file's, dirty pages go to the page cache), and a thread still writing into a chunk there (an
// idle thread's) just faults its page back in from the file. Window 0 holds the header: kept.
void TraceFile::release_old_window(uint64_t index) {
  if (index <= kKeptWindows) return;
  if (uint8_t* old = windows_[index - kKeptWindows].load(std::memory_order_relaxed)) madvise(old, kWindowSize, MADV_DONTNEED);
}

// The descriptor is not kept between windows: the mappings hold the file, and the next window
// (each MiB of trace) reopens it by its absolute path, with owned_fd's identity check. A kept one
// was in every traced process's table: a child's own listing of its descriptors (CPython's
// test_pass_fds_redirected) found it, and under RLIMIT_NOFILE 4 it took the program's third file.
void TraceFile::let_go_of_fd() {
  if (fd_ < 0) return;
  struct stat st;
  if (fstat(fd_, &st) == 0 && same_file(st, dev_, ino_)) ::close(fd_);
  fd_ = -1;
}

uint8_t* TraceFile::window(uint64_t index) {
  if (index >= kMaxWindows) {
    if (!failed_.exchange(true)) stop("trace file %s reached its size limit%s; tracing stopped, the program continues", "");
    return nullptr;
  }
  uint8_t* w = windows_[index].load(std::memory_order_acquire);
  if (w) return w;
  OwnWork own;  // open/fallocate/messages: no cancellation, no SIGPIPE or SIGXFSZ
  pthread_mutex_lock(&grow_mu_);
  w = windows_[index].load(std::memory_order_acquire);
  if (!w && !failed_.load()) {
    off_t off = off_t(index * kWindowSize);
    struct stat st;
    int fd = owned_fd(&st);
    if (fd < 0) {
      stop("lost the trace file %s (%s); tracing stopped, the program continues",
           errno == ESTALE ? "another file is at its path now" : strerror(errno));
    } else if (st.st_size < off) {
      stop("the trace file %s was truncated%s; tracing stopped, the program continues", " by someone else");
    } else {
      // Growing past RLIMIT_FSIZE would raise SIGXFSZ and kill the program: treat it as full.
      struct rlimit lim;
      int err = getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
                        uint64_t(off) + kWindowSize > uint64_t(lim.rlim_cur)
                    ? EFBIG
                    : posix_fallocate(fd, off, off_t(kWindowSize));
      if (err == 0) {
        void* m = mmap(nullptr, kWindowSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
        // Checked again: the program may have closed and reused the descriptor meanwhile.
        if (m != MAP_FAILED && (fstat(fd, &st) != 0 || !same_file(st, dev_, ino_))) {
          munmap(m, kWindowSize);
          m = MAP_FAILED;
          errno = ESTALE;  // "another file": the descriptor is the program's now
          fd_ = -1;
        }
        if (m != MAP_FAILED) {
          w = static_cast<uint8_t*>(m);
          windows_[index].store(w, std::memory_order_release);
          if (index > windows_high_.load(std::memory_order_relaxed)) windows_high_.store(index, std::memory_order_relaxed);
          release_old_window(index);
          let_go_of_fd();
        } else {
          err = errno;
        }
      }
      if (!w) stop("cannot extend trace file %s: %s; tracing stopped, the program continues", strerror(err));
    }
  }
  pthread_mutex_unlock(&grow_mu_);
  return w;
}

format::ChunkHeader* TraceFile::claim_chunk(uint32_t tid, uint64_t base_ns) {
  if (failed_.load(std::memory_order_relaxed) || !header_) return nullptr;
  uint64_t index = next_chunk_.fetch_add(1, std::memory_order_relaxed);
  uint64_t offset = format::kFileHeaderSize + index * format::kChunkSize;
  uint8_t* w = window(offset / kWindowSize);
  if (!w) return nullptr;
  auto* c = reinterpret_cast<format::ChunkHeader*>(w + offset % kWindowSize);
  c->tid = tid;
  c->index = uint32_t(index);
  c->base_ns = base_ns;
  c->used = 0;
  __atomic_store_n(&c->magic, format::kChunkMagic, __ATOMIC_RELEASE);
  __atomic_store_n(&header_->chunks_allocated, index + 1, __ATOMIC_RELAXED);
  return c;
}

void TraceFile::mark_closed(uint64_t end_ns) {
  if (!header_) return;
  header_->end_monotonic_ns = end_ns;
  __atomic_or_fetch(&header_->flags, format::kHeaderClosedCleanly, __ATOMIC_RELEASE);
}

void TraceFile::mark_quick_exit(uint64_t end_ns, int status) {
  if (!header_) return;
  header_->exit_status = uint32_t(status);
  header_->end_monotonic_ns = end_ns;
  __atomic_or_fetch(&header_->flags, format::kHeaderClosedCleanly | format::kHeaderQuickExit, __ATOMIC_RELEASE);
}

void TraceFile::abandon() {
  struct stat st;  // the parent's descriptor, closed only if it still is that file
  if (fd_ >= 0 && fstat(fd_, &st) == 0 && same_file(st, dev_, ino_)) ::close(fd_);
  fd_ = -1;
  header_ = nullptr;
  next_chunk_.store(0);
  failed_.store(false);
  // The parent's windows stay mapped in the child but are never written again. (Cleared up to the
  // highest one added: storing to all 2 MiB of slots copied them into every forked child, and
  // reading them all faulted them in: ~1.7 ms a fork.)
  const uint64_t high = windows_high_.exchange(0, std::memory_order_relaxed);
  for (uint64_t i = 0; i <= high && i < kMaxWindows; ++i) windows_[i].store(nullptr, std::memory_order_relaxed);
  pthread_mutex_init(&grow_mu_, nullptr);
}

}  // namespace vt
