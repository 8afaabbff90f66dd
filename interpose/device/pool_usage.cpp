// See pool_usage.h.
#include "pool_usage.h"

#include "accounting.h"
#include "cuda_decls.h"
#include "driver_api.h"
#include "live_tracker.h"
#include "meta_records.h"
#include "payload.h"
#include "recorder_internal.h"

namespace vt {

void record_pool_usage(const Event& e) {
  if (e.device < 0 || !g_api.mem_pool_get_attribute) return;
  constexpr int kMax = int(format::kMaxPoolUsageRows);
  uint64_t pools[kMax];
  int n = 0;
  auto add = [&](uint64_t p) {
    if (!p || n == kMax) return;
    for (int i = 0; i < n; ++i)
      if (pools[i] == p) return;
    pools[n++] = p;
  };
  CUdevice dev = 0;
  if (g_api.device_get && g_api.device_get(&dev, e.device) == CUDA_SUCCESS) {
    CUmemoryPool p = nullptr;
    if (g_api.device_get_mem_pool && g_api.device_get_mem_pool(&p, dev) == CUDA_SUCCESS) add(reinterpret_cast<uint64_t>(p));
    if (g_api.device_get_default_mem_pool && g_api.device_get_default_mem_pool(&p, dev) == CUDA_SUCCESS)
      add(reinterpret_cast<uint64_t>(p));
  }
  uint64_t tracked[kMax];
  const int t = tracked_device_pools(e.device, tracked, kMax);
  for (int i = 0; i < t; ++i) add(tracked[i]);

  uint8_t buf[kMax * 4 * 10 + 32];
  format::PayloadWriter w(buf, sizeof buf);
  format::PoolUsageRow rows[kMax];
  uint64_t count = 0;
  for (int i = 0; i < n; ++i) {
    cuuint64_t reserved = 0, used = 0;
    CUmemoryPool p = reinterpret_cast<CUmemoryPool>(pools[i]);
    if (g_api.mem_pool_get_attribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        g_api.mem_pool_get_attribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
      continue;  // not a pool (any more), or not of this device
    rows[count++] = {pools[i], uint64_t(kLocationDevice) << 32 | uint32_t(e.device), reserved, used};
  }
  if (!count) return;
  format::encode<format::PoolUsageSchema>(w, format::PoolUsageRecord{uint64_t(e.device), count});
  for (uint64_t i = 0; i < count; ++i) format::encode<format::PoolUsageRowSchema>(w, rows[i]);
  write_meta(format::kTagPoolUsage, w.data(), w.size(), e.t_ns);
}

}  // namespace vt
