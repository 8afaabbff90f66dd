// See graph_state.h.
#include "graph_state.h"

#include <atomic>

#include "driver_api.h"
#include "op_table.h"

namespace vt {

namespace {

constexpr int kCaptureSlots = 64;
constexpr uint64_t kPtszBit = 1ull << 63;  // stream handles are pointers: bit 63 is free
std::atomic<uint64_t> g_capture_slots[kCaptureSlots];  // key + 1 per capture begun; 0 = free
// g_capture_gate (below): captures begun and not ended, plus kAlwaysAsk once a capture was missed.
constexpr int kAlwaysAsk = 1 << 24;
void always_ask() {
  int g = g_capture_gate.load(std::memory_order_relaxed);
  while (g < kAlwaysAsk / 2 && !g_capture_gate.compare_exchange_weak(g, g + kAlwaysAsk, std::memory_order_relaxed)) {
  }
}

uint64_t key_of(CUstream s, bool ptsz) { return (reinterpret_cast<uint64_t>(s) | (ptsz ? kPtszBit : 0)) + 1; }

using IsCapturingFn = CUresult (*)(CUstream, CUstreamCaptureStatus*);
using GraphMemAttrFn = CUresult (*)(CUdevice, CUgraphMem_attribute, void*);

constexpr int kSampledDevices = 64;
struct PoolFigures {
  std::atomic<uint64_t> reserved{0}, used{0};
};
PoolFigures g_pool[kSampledDevices];

}  // namespace

std::atomic<int> g_capture_gate{0};

bool stream_captures(CUstream stream, bool ptsz) {
  HookId id = ptsz ? HookId::cuStreamIsCapturing_ptsz : HookId::cuStreamIsCapturing;
  auto fn = reinterpret_cast<IsCapturingFn>(g_real[int(id)].load(std::memory_order_relaxed));
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  // STREAM_CAPTURE_IMPLICIT (the legacy stream while another captures): not capturing itself.
  return fn && fn(stream, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

void capture_began(CUstream stream, bool ptsz) {
  const uint64_t key = key_of(stream, ptsz);
  g_capture_gate.fetch_add(1, std::memory_order_relaxed);
  for (auto& slot : g_capture_slots) {
    uint64_t expected = 0;
    if (slot.compare_exchange_strong(expected, key, std::memory_order_relaxed)) return;
  }
  always_ask();  // full: ask on every allocation
}

void capture_end_attempted(CUstream stream, bool ptsz) {
  if (stream_captures(stream, ptsz)) return;  // the end failed and the capture goes on
  const uint64_t key = key_of(stream, ptsz);
  for (auto& slot : g_capture_slots) {
    uint64_t expected = key;
    // Per-thread streams share a key (stream 0): one begin's slot per end.
    if (slot.compare_exchange_strong(expected, 0, std::memory_order_relaxed)) {
      g_capture_gate.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

void capture_status_seen(CUstreamCaptureStatus status) {
  if (status != CU_STREAM_CAPTURE_STATUS_NONE && !captures_possible()) always_ask();
}

bool sample_graph_pool(int32_t device, uint64_t* reserved, uint64_t* used, bool* changed) {
  auto fn = reinterpret_cast<GraphMemAttrFn>(
      g_real[int(HookId::cuDeviceGetGraphMemAttribute)].load(std::memory_order_relaxed));
  if (!fn || device < 0) return false;
  cuuint64_t r = 0, u = 0;
  if (fn(CUdevice(device), CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) != CUDA_SUCCESS ||
      fn(CUdevice(device), CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
    return false;
  *reserved = r;
  *used = u;
  if (device >= kSampledDevices) {
    *changed = true;
    return true;
  }
  PoolFigures& p = g_pool[device];
  const uint64_t old_r = p.reserved.exchange(r, std::memory_order_relaxed);
  const uint64_t old_u = p.used.exchange(u, std::memory_order_relaxed);
  *changed = old_r != r || old_u != u;
  return true;
}

void forget_graph_state() {
  auto zero = [](auto& a) {  // (only where needed: a page stored to is copied into the child)
    if (a.load(std::memory_order_relaxed)) a.store(0, std::memory_order_relaxed);
  };
  for (auto& slot : g_capture_slots) zero(slot);
  zero(g_capture_gate);
  for (auto& p : g_pool) {
    zero(p.reserved);
    zero(p.used);
  }
}

}  // namespace vt
