// See pool_sync.h.
#include "pool_sync.h"

#include "clock.h"
#include "driver_api.h"
#include "meta_records.h"
#include "payload.h"
#include "recorder.h"
#include "recorder_internal.h"

namespace vt {

std::atomic<bool> g_pool_release_possible{false};
std::atomic<bool> g_stream_ordered_seen{false};

void pools_synchronized() {
  if (!g_pool_release_possible.load(std::memory_order_relaxed) || !recording()) return;
  if (!g_pool_release_possible.exchange(false, std::memory_order_relaxed)) return;  // another thread's sync wrote it
  uint64_t ctx = 0;
  int32_t device = -1;
  current_context(&ctx, &device);
  if (device < 0) return;  // no context: no pool of this thread's to release
  uint8_t buf[16];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::PoolSyncSchema>(p, format::PoolSyncRecord{uint64_t(device)});
  write_meta(format::kTagPoolSync, p.data(), p.size(), now_ns());
}

void forget_pool_sync() { g_pool_release_possible.store(false, std::memory_order_relaxed); }

}  // namespace vt
