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
#include "config.h"
#include "log.h"

namespace vt {

std::atomic<uint8_t*> TraceFile::windows_[TraceFile::kMaxWindows];

namespace {

// The pid recorded in an existing trace, or 0 if it is not one of ours.
long pid_in_existing_trace(const char* path) {
  int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  format::FileHeader h;
  ssize_t n = pread(fd, &h, sizeof h, 0);
  ::close(fd);
  if (n != ssize_t(sizeof h) || memcmp(h.magic, format::kFileMagic, 8) != 0) return 0;
  return long(h.pid);
}

bool process_alive(long pid) { return pid > 0 && (kill(pid_t(pid), 0) == 0 || errno == EPERM); }

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

}  // namespace

bool TraceFile::create_file(const char* path, long pid) {
  // Candidates: the configured path, then <path>.<pid>, <path>.<pid>.1, ... The configured path
  // is replaced only when it holds a trace of a process that is gone; a live owner (a parent,
  // or this very pid before an exec) keeps its file. O_EXCL|O_NOFOLLOW: never through a symlink.
  char candidate[sizeof path_];
  int replaced = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    int w = attempt == 0   ? snprintf(candidate, sizeof candidate, "%s", path)
            : attempt == 1 ? snprintf(candidate, sizeof candidate, "%s.%ld", path, pid)
                           : snprintf(candidate, sizeof candidate, "%s.%ld.%d", path, pid, attempt - 1);
    if (w < 0 || size_t(w) >= sizeof candidate) break;
    fd_ = ::open(candidate, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
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
    long owner = S_ISREG(st.st_mode) ? pid_in_existing_trace(candidate) : 0;
    if (owner != 0 && !process_alive(owner) && replaced++ < 4) {
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
    ::close(fd_);
    fd_ = -1;
    unlink(path_);  // an empty file would only confuse
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
  return true;
}

uint8_t* TraceFile::window(uint64_t index) {
  if (index >= kMaxWindows) {
    if (!failed_.exchange(true)) log_line("trace file %s reached its size limit; tracing stopped", path_);
    return nullptr;
  }
  uint8_t* w = windows_[index].load(std::memory_order_acquire);
  if (w) return w;
  pthread_mutex_lock(&grow_mu_);
  w = windows_[index].load(std::memory_order_acquire);
  if (!w && !failed_.load()) {
    off_t off = off_t(index * kWindowSize);
    // Growing past RLIMIT_FSIZE would raise SIGXFSZ and kill the program: treat it as full.
    struct rlimit lim;
    int err = getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
                      uint64_t(off) + kWindowSize > uint64_t(lim.rlim_cur)
                  ? EFBIG
                  : posix_fallocate(fd_, off, off_t(kWindowSize));
    if (err == 0) {
      void* m = mmap(nullptr, kWindowSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, off);
      if (m != MAP_FAILED) {
        w = static_cast<uint8_t*>(m);
        windows_[index].store(w, std::memory_order_release);
      } else {
        err = errno;
      }
    }
    if (!w) {
      failed_.store(true);
      if (header_) header_->flags |= format::kHeaderTracingFailed;
      log_line("cannot extend trace file %s: %s; tracing stopped, the program continues", path_,
               strerror(err));
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

void TraceFile::abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  header_ = nullptr;
  next_chunk_.store(0);
  failed_.store(false);
  // The parent's windows stay mapped in the child but are never written again.
  for (auto& w : windows_) w.store(nullptr, std::memory_order_relaxed);
  pthread_mutex_init(&grow_mu_, nullptr);
}

}  // namespace vt
