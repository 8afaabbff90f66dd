// See code_costs.h.
#include "code_costs.h"

#include <atomic>

#include "driver_api.h"

namespace vt {

namespace {

bool read_free(uint64_t* out) {
  size_t free_b = 0, total_b = 0;
  if (!g_api.mem_get_info || g_api.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS) return false;
  *out = free_b;
  return true;
}

bool read_in(CUcontext c, uint64_t* out) {
  if (!g_api.ctx_push || !g_api.ctx_pop || g_api.ctx_push(c) != CUDA_SUCCESS) return false;
  const bool ok = read_free(out);
  CUcontext popped = nullptr;
  g_api.ctx_pop(&popped);
  return ok;
}

constexpr int kSeenSlots = 4096, kProbes = 64;
std::atomic<uint64_t> g_seen[kSeenSlots];

}  // namespace

bool free_on_device(int32_t device, uint64_t* out) {
  uint64_t ctx = 0;
  int32_t current = -1;
  current_context(&ctx, &current);
  if (ctx && (device < 0 || current == device)) return read_free(out);
  if (device < 0 || !g_api.primary_ctx_get_state || !g_api.primary_ctx_retain || !g_api.primary_ctx_release)
    return false;
  unsigned flags = 0;
  int active = 0;
  if (g_api.primary_ctx_get_state(device, &flags, &active) != CUDA_SUCCESS || !active) return false;
  CUcontext c = nullptr;
  if (g_api.primary_ctx_retain(&c, device) != CUDA_SUCCESS) return false;  // active: this creates nothing
  const bool ok = read_in(c, out);
  g_api.primary_ctx_release(device);
  return ok;
}

bool free_in_context(uint64_t ctx, uint64_t* out) {
  if (!ctx) return false;
  uint64_t current = 0;
  int32_t device = -1;
  current_context(&current, &device);
  return current == ctx ? read_free(out) : read_in(reinterpret_cast<CUcontext>(ctx), out);
}

bool first_use(uint64_t object, uint64_t ctx) {
  uint64_t key = (object * 0x9e3779b97f4a7c15ull) ^ (ctx * 0xc2b2ae3d27d4eb4full) ^ (ctx >> 29);
  if (!key) key = 1;
  const uint64_t h = key >> 40;
  for (int i = 0; i < kProbes; ++i) {
    std::atomic<uint64_t>& slot = g_seen[(h + uint64_t(i)) % kSeenSlots];
    uint64_t v = slot.load(std::memory_order_relaxed);
    if (v == 0 && slot.compare_exchange_strong(v, key, std::memory_order_relaxed)) return true;
    if (v == key) return false;
  }
  return false;
}

}  // namespace vt
