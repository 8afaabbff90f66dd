// See shm_summary.h (the layout: format/shm_layout.h). Creation: a temporary name (never listed by top), locked, sized, mapped and
// filled, then linked to its final name; so a reader never sees a published summary that is not
// locked by a live writer. Everything here runs once per process (the sweep, the creation) or on
// the sampler thread (updates): no allocation, no stdio.
#include "shm_summary.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <cstdio>
#include <cstring>

#include "clock.h"
#include "own_work.h"
#include "live_tracker.h"
#include "shm_layout.h"

namespace vt {

using namespace format;  // the layout: ShmSummary, kShm*, inspect_shm_entry

namespace {
ShmSummary* g_shm = nullptr;
char g_name[64];     // the final name in /dev/shm
dev_t g_dev = 0;     // and the file's identity, so that exit removes ours and no other
ino_t g_ino = 0;

struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

bool starts_with(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

// Removes this user's summaries (and half-created ones) whose writers are gone: processes killed
// by SIGKILL, aborted, _exit-ed or exec-ed leave theirs behind. At most 4096 entries are looked
// at; a stack buffer and getdents64 (no opendir: no allocation in the traced program).
void sweep_stale(int dirfd) {
  alignas(8) static char buf[4096];  // (the session's open lock held: off a small stack)
  uid_t uid = geteuid();
  int seen = 0;
  for (;;) {
    long n = syscall(SYS_getdents64, dirfd, buf, sizeof buf);
    if (n <= 0) return;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<linux_dirent64*>(buf + off);
      off += d->d_reclen;
      if (++seen > 4096) return;
      if (!starts_with(d->d_name, kShmPrefix) && !starts_with(d->d_name, kShmTempPrefix)) continue;
      if (inspect_shm_entry(dirfd, d->d_name, uid, nullptr) == ShmState::kStale) remove_stale_shm_entry(dirfd, d->d_name);
    }
  }
}

// Publishes the locked temporary file `temp` as vramtrace.<pid>, or .<pid>.<n> when a live
// process (another pid namespace sharing /dev/shm) holds that name; a stale holder is removed.
bool publish(int dirfd, const char* temp, long pid) {
  constexpr int kNames = 16;  // vramtrace.<pid>, then .<pid>.1 ... .<pid>.15
  for (int n = 0; n < kNames; ++n) {
    if (n == 0) snprintf(g_name, sizeof g_name, "%s%ld", kShmPrefix, pid);
    else snprintf(g_name, sizeof g_name, "%s%ld.%d", kShmPrefix, pid, n);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (linkat(dirfd, temp, dirfd, g_name, 0) == 0) return true;
      if (errno != EEXIST) return false;
      if (inspect_shm_entry(dirfd, g_name, geteuid(), nullptr) != ShmState::kStale ||
          !remove_stale_shm_entry(dirfd, g_name))
        break;  // held by a live process, or not ours: the next name
    }
  }
  return false;
}

}  // namespace

void open_shm_summary(const char* trace_path) {
  if (g_shm) return;
  int saved_errno = errno;
  int dirfd = open(kShmDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    errno = saved_errno;
    return;
  }
  sweep_stale(dirfd);
  long pid = process_id();
  char temp[96];
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  snprintf(temp, sizeof temp, "%s%ld.%lx", kShmTempPrefix, pid, long(ts.tv_nsec) ^ long(ts.tv_sec));
  void* m = MAP_FAILED;
  int fd = openat(dirfd, temp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  // The lock first: from here until the process ends (or forks away its mapping), it is held.
  struct stat st;
  // Its pages allocated now (posix_fallocate, not a sparse ftruncate): on a full /dev/shm a store
  // into a page tmpfs could not give would be a SIGBUS in the program; this fails instead.
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && posix_fallocate(fd, 0, sizeof(ShmSummary)) == 0 &&
      fstat(fd, &st) == 0) {
    m = mmap(nullptr, sizeof(ShmSummary), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_dev = st.st_dev;
    g_ino = st.st_ino;
  }
  if (fd >= 0) close(fd);  // the mapping keeps the file, and with it the lock
  if (m != MAP_FAILED) {
    auto* s = static_cast<ShmSummary*>(m);
    memcpy(s->magic, kShmMagic, sizeof s->magic);
    s->version = kShmVersion;
    s->size = sizeof(ShmSummary);
    s->pid = uint64_t(pid);
    s->pid_namespace = pid_namespace_id();
    snprintf(s->trace_path, sizeof s->trace_path, "%s", trace_path);
    if (publish(dirfd, temp, pid)) {
      __atomic_store_n(&g_shm, s, __ATOMIC_RELEASE);
    } else {
      munmap(m, sizeof(ShmSummary));
    }
  }
  if (fd >= 0) unlinkat(dirfd, temp, 0);
  close(dirfd);
  errno = saved_errno;
}

void update_shm_summary() {
  ShmSummary* s = __atomic_load_n(&g_shm, __ATOMIC_ACQUIRE);
  if (!s) return;
  // The largest sites first (stack ids index the tracker's counters).
  constexpr int kLast = kShmTopSites - 1;
  ShmSummary::Site best[kShmTopSites] = {};
  for (uint32_t id = 1; id < kTrackedStacks; ++id) {
    int64_t b = site_bytes(id);
    if (b <= best[kLast].bytes) continue;
    int i = kLast;
    while (i > 0 && best[i - 1].bytes < b) {
      best[i] = best[i - 1];
      --i;
    }
    best[i] = {id, -1, b};
  }
  s->seq.fetch_add(1, std::memory_order_acq_rel);  // odd: writing
  for (int d = 0; d < kTrackedDevices; ++d) {
    for (int k = 0; k < kBuckets; ++k) s->live[d][k] = live_bytes(d, k);
    s->peak[d] = peak_bytes(d);
  }
  memcpy(s->top, best, sizeof best);
  s->updated_realtime_ns = realtime_ns();
  s->seq.fetch_add(1, std::memory_order_acq_rel);  // even: consistent
}

void close_shm_summary() {
  if (!g_shm) return;
  int saved_errno = errno;
  int dirfd = open(kShmDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  if (dirfd >= 0 && fstatat(dirfd, g_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == g_dev && st.st_ino == g_ino)
    unlinkat(dirfd, g_name, 0);
  if (dirfd >= 0) close(dirfd);
  errno = saved_errno;
}

void forget_shm_summary() {
  // The child inherited the parent's mapping, and with it a hold on the parent's lock: drop it,
  // or the parent's summary would look alive after the parent died. The child makes its own.
  ShmSummary* s = g_shm;
  g_shm = nullptr;
  if (s) {
    int saved_errno = errno;
    munmap(s, sizeof(ShmSummary));
    errno = saved_errno;
  }
}

}  // namespace vt
