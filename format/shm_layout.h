// The layout of the shared-memory summary of a traced process, and how a reader checks an entry,
// shared by its writer (interpose/record/shm_summary.cpp) and its readers (`vramtrace top`, and the sweep
// a writer makes of stale entries). The summary holds live bytes per device and kind, peaks, the
// call sites holding the most right now (stack ids: `top` symbolizes them from the trace file
// named here). /dev/shm/vramtrace.<pid> (or .<pid>.<n> when that name is held by a live process
// of another pid namespace), mode 0600, rewritten every 250 ms by the sampler thread under a
// sequence lock, removed at exit. Layout and rules: docs/top.md.
//
// Liveness: the writer holds an exclusive flock(2) on the segment for as long as its mapping
// exists; the kernel drops it when the process ends in any way (SIGKILL, abort, _exit, exec), and
// a forked child drops its inherited mapping. A summary whose lock can be taken was left behind:
// it is stale whatever its pid says (pid reuse, pid namespaces), and its owner may remove it.
// Readers (top, and the sweep a process makes when it creates its own) trust nothing else of a
// /dev/shm entry either: inspect_shm_entry() below.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "accounting.h"
#include "op_table.h"

namespace vt::format {

inline constexpr char kShmDir[] = "/dev/shm";
inline constexpr char kShmPrefix[] = "vramtrace.";       // published summaries
inline constexpr char kShmTempPrefix[] = ".vramtrace-new.";  // being created (never listed)
inline constexpr char kShmMagic[8] = {'V', 'T', 'S', 'H', 'M', '0', '2', '\0'};
inline constexpr uint32_t kShmVersion = 2;
// Devices with a row of their own (the live tracker counts higher ordinals in no row of the
// summary) and the call sites listed. A row has one column per Bucket (accounting.h).
inline constexpr int kTrackedDevices = 16;
inline constexpr int kShmTopSites = 16;

struct ShmSummary {
  char magic[8];                // "VTSHM02"
  uint32_t version;             // 2
  uint32_t size;                // sizeof(ShmSummary)
  std::atomic<uint64_t> seq;    // odd while being written
  uint64_t pid;                 // in the writer's pid namespace
  uint64_t pid_namespace;       // inode of the writer's /proc/self/ns/pid (0: unknown)
  uint64_t updated_realtime_ns;
  char trace_path[1024];
  int64_t live[kTrackedDevices][kBuckets];  // [device][device, managed, pinned_host, imported]
  int64_t peak[kTrackedDevices];
  struct Site {
    uint32_t stack;
    int32_t device;             // -1: all devices together
    int64_t bytes;
  } top[kShmTopSites];
};

// ---- Reading a /dev/shm entry without trusting it (header-only: `top` links no tracer) ----

enum class ShmState {
  kLive,     // a valid summary whose writer holds its lock: *out filled
  kStale,    // the caller's, and its writer is gone (unlocked): remove it
  kForeign,  // owned by another user: not read
  kInvalid,  // not a regular file, wrong size, magic or version, or a torn read
  kGone,     // vanished or unreadable
};

// The inode of /proc/self/ns/pid, 0 when unknown.
inline uint64_t pid_namespace_id() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? uint64_t(st.st_ino) : 0;
}

// Looks at /dev/shm/<name> (dirfd: an open /dev/shm) as user `uid`: only a regular file owned by
// `uid` is opened (fstatat first), with O_NOFOLLOW | O_NONBLOCK (a symlink or a FIFO swapped in
// neither redirects nor hangs us), fstat-checked again (the same file, exactly
// sizeof(ShmSummary) to be read), liveness by the writer's lock, then read
// with pread under the sequence lock (never a mapping: a file shrunk under us cannot SIGBUS us),
// and magic, version, size and pid checked. A temporary name (kShmTempPrefix) is kLive while
// locked, kStale when unlocked and over 10 s old (its creator died), else kInvalid.
inline ShmState inspect_shm_entry(int dirfd, const char* name, uid_t uid, ShmSummary* out) {
  // What it is, before opening anything: another user's file is not even opened.
  struct stat pre;
  if (fstatat(dirfd, name, &pre, AT_SYMLINK_NOFOLLOW) != 0) return ShmState::kGone;
  if (!S_ISREG(pre.st_mode)) return ShmState::kInvalid;
  if (pre.st_uid != uid) return ShmState::kForeign;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errno == ELOOP ? ShmState::kInvalid : ShmState::kGone;
  struct stat st;
  ShmState state = ShmState::kInvalid;
  bool temp = strncmp(name, kShmTempPrefix, sizeof kShmTempPrefix - 1) == 0;
  if (fstat(fd, &st) != 0) {
    state = ShmState::kGone;
  } else if (!S_ISREG(st.st_mode) || st.st_uid != uid || st.st_dev != pre.st_dev || st.st_ino != pre.st_ino) {
    state = ShmState::kInvalid;  // swapped between the look and the open
  } else if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    // Nobody holds it. A published summary of this version is stale at once (it was locked
    // before it got its name); a temporary one once it is too old to be one being created right
    // now. Anything else (another version's summary, junk) is left alone.
    flock(fd, LOCK_UN);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    bool old = now.tv_sec - st.st_mtim.tv_sec > 10;
    char magic[sizeof kShmMagic] = {};
    bool ours = st.st_size == off_t(sizeof(ShmSummary)) && pread(fd, magic, sizeof magic, 0) == ssize_t(sizeof magic) &&
                memcmp(magic, kShmMagic, sizeof magic) == 0;
    state = temp ? (old ? ShmState::kStale : ShmState::kInvalid) : ours ? ShmState::kStale : ShmState::kInvalid;
  } else if (errno != EWOULDBLOCK) {
    state = ShmState::kGone;
  } else if (temp) {
    state = ShmState::kLive;  // being created: nothing to read yet
  } else if (st.st_size == off_t(sizeof(ShmSummary)) && out) {
    // The sequence lock: an even, unchanged seq around the copy.
    alignas(ShmSummary) unsigned char buf[sizeof(ShmSummary)];
    for (int attempt = 0; attempt < 100 && state != ShmState::kLive; ++attempt) {
      uint64_t after = 1;
      if (pread(fd, buf, sizeof buf, 0) != ssize_t(sizeof buf)) break;
      if (pread(fd, &after, sizeof after, off_t(offsetof(ShmSummary, seq))) != ssize_t(sizeof after)) break;
      uint64_t before;
      memcpy(&before, buf + offsetof(ShmSummary, seq), sizeof before);
      if ((before & 1) || before != after) continue;
      memcpy(static_cast<void*>(out), buf, sizeof buf);
      state = ShmState::kLive;
    }
    if (state == ShmState::kLive) {
      out->trace_path[sizeof out->trace_path - 1] = '\0';
      if (memcmp(out->magic, kShmMagic, sizeof kShmMagic) != 0 || out->version != kShmVersion ||
          out->size != sizeof(ShmSummary) || out->pid == 0)
        state = ShmState::kInvalid;
    }
  }
  close(fd);
  return state;
}

// Removes the stale entry `name` of `dirfd` if it is still the file inspected (same inode).
inline bool remove_stale_shm_entry(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  bool removed = false;
  struct stat a, b;
  // Take the lock ourselves while checking, so a writer cannot take this file over meanwhile.
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
      a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    removed = unlinkat(dirfd, name, 0) == 0;
  close(fd);
  return removed;
}

}  // namespace vt::format
