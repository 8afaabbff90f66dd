// See shm_summary.h.
#include "shm_summary.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "clock.h"
#include "live_tracker.h"

namespace vt {

namespace {
ShmSummary* g_shm = nullptr;
char g_name[64];
}  // namespace

void open_shm_summary(const char* trace_path) {
  if (g_shm) return;
  snprintf(g_name, sizeof g_name, "/vramtrace.%ld", long(getpid()));
  shm_unlink(g_name);  // a stale one from a process that had our pid
  int fd = shm_open(g_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (ftruncate(fd, sizeof(ShmSummary)) != 0) {
    close(fd);
    shm_unlink(g_name);
    return;
  }
  void* m = mmap(nullptr, sizeof(ShmSummary), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    shm_unlink(g_name);
    return;
  }
  auto* s = static_cast<ShmSummary*>(m);
  memcpy(s->magic, "VTSHM01", 8);
  s->version = 1;
  s->size = sizeof(ShmSummary);
  s->pid = uint64_t(getpid());
  snprintf(s->trace_path, sizeof s->trace_path, "%s", trace_path);
  __atomic_store_n(&g_shm, s, __ATOMIC_RELEASE);
}

void update_shm_summary() {
  ShmSummary* s = __atomic_load_n(&g_shm, __ATOMIC_ACQUIRE);
  if (!s) return;
  // The largest sites first (stack ids index the tracker's counters).
  ShmSummary::Site best[16] = {};
  for (uint32_t id = 1; id < kTrackedStacks; ++id) {
    int64_t b = site_bytes(id);
    if (b <= best[15].bytes) continue;
    int i = 15;
    while (i > 0 && best[i - 1].bytes < b) {
      best[i] = best[i - 1];
      --i;
    }
    best[i] = {id, -1, b};
  }
  s->seq.fetch_add(1, std::memory_order_acq_rel);  // odd: writing
  for (int d = 0; d < 16; ++d) {
    for (int k = 0; k < 4; ++k) s->live[d][k] = live_bytes(d, k);
    s->peak[d] = peak_bytes(d);
  }
  memcpy(s->top, best, sizeof best);
  s->updated_realtime_ns = realtime_ns();
  s->seq.fetch_add(1, std::memory_order_acq_rel);  // even: consistent
}

void close_shm_summary() {
  if (g_shm) shm_unlink(g_name);
}

void forget_shm_summary() { g_shm = nullptr; }

}  // namespace vt
