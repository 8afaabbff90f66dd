// See gen_trace_sites.h. One "training step" per loop iteration, like a PyTorch job under its
// caching allocator, a data loader and expandable segments, per thread:
//   forward   six activations from two layer call sites (cuMemAlloc_v2), the same addresses every
//             other step (address reuse), two stream-ordered workspaces (cuMemAllocAsync)
//   vmm       every 4th step a physical chunk is created and mapped into the thread's reserved
//             range (cuMemCreate + cuMemMap), two steps later unmapped and released
//   loader    every 16th step a pinned host buffer (cuMemHostAlloc), freed the next time
//   backward  activations freed in reverse order (cuMemFree_v2), workspaces cuMemFreeAsync
//   optimizer every 64th step state from a pool (cuMemAllocFromPoolAsync) freed at once
//   leak      every 1000th step 1 MiB that is never freed
//   oom       every 5000th step a failed 96 GiB request (CUDA_ERROR_OUT_OF_MEMORY, free/total)
// About 17 events per step. Every site is noinline so that each keeps a distinct stack.
#include "gen_trace_sites.h"

#include <pthread.h>

#include "clock.h"
#include "recorder.h"

namespace {

using vt::Event;
using vt::HookId;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTotal = 80 * kGiB;  // the synthetic device
constexpr int kOom = 2;                 // CUDA_ERROR_OUT_OF_MEMORY

struct Worker {
  GenThread* t;
  uint64_t ctx = 0;
  int32_t device = 0;
  uint64_t region = 0;   // this thread's device address region
  uint64_t vmm_va = 0;   // reserved VMM range
  uint64_t stream = 0;
  uint64_t pool = 0;
  uint64_t live = 0;     // bytes live now (for free bytes at a failure)
  uint64_t leak_next = 0;
  uint64_t handle_next = 0;
  uint64_t host_buf = 0;
  bool done() const { return t->emitted >= t->budget; }
};

__attribute__((noinline)) void emit(Worker& w, Event& e) {
  if (w.done()) return;
  e.t_ns = vt::now_ns();
  e.context = w.ctx;
  e.device = w.device;
  vt::record(e);
  w.t->emitted++;
}

Event make(HookId op) {
  Event e;
  e.set_op(op);
  return e;
}

__attribute__((noinline)) void alloc_activation(Worker& w, uint64_t addr, uint64_t size) {
  Event e = make(HookId::cuMemAlloc_v2);
  e.set_addr(addr);
  e.set_size(size);
  emit(w, e);
  w.live += size;
}

__attribute__((noinline)) void free_activation(Worker& w, uint64_t addr, uint64_t size) {
  Event e = make(HookId::cuMemFree_v2);
  e.set_addr(addr);
  emit(w, e);
  w.live -= size;
}

__attribute__((noinline)) void alloc_workspace(Worker& w, uint64_t addr, uint64_t size) {
  Event e = make(HookId::cuMemAllocAsync);
  e.set_addr(addr);
  e.set_size(size);
  e.set_stream(w.stream);
  emit(w, e);
  w.live += size;
}

__attribute__((noinline)) void free_workspace(Worker& w, uint64_t addr, uint64_t size) {
  Event e = make(HookId::cuMemFreeAsync);
  e.set_addr(addr);
  e.set_stream(w.stream);
  emit(w, e);
  w.live -= size;
}

constexpr uint64_t kActSizes[6] = {8 * kMiB, 32 * kMiB, 2 * kMiB, 64 * kMiB, 4 * kMiB, 16 * kMiB};

uint64_t act_addr(const Worker& w, uint64_t step, int j) {
  return w.region + (step & 1) * 512 * kMiB + uint64_t(j) * 64 * kMiB;
}

__attribute__((noinline)) void layer_a(Worker& w, uint64_t step) {
  for (int j = 0; j < 3; ++j) alloc_activation(w, act_addr(w, step, j), kActSizes[j]);
}

__attribute__((noinline)) void layer_b(Worker& w, uint64_t step) {
  for (int j = 3; j < 6; ++j) alloc_activation(w, act_addr(w, step, j), kActSizes[j]);
}

__attribute__((noinline)) void attention(Worker& w, uint64_t step) {
  uint64_t base = w.region + 2 * kGiB + (step % 4) * 16 * kMiB;
  alloc_workspace(w, base, 6 * kMiB + (step % 7) * 4096);
  alloc_workspace(w, base + 8 * kMiB, 2 * kMiB);
}

__attribute__((noinline)) void backward(Worker& w, uint64_t step) {
  uint64_t base = w.region + 2 * kGiB + (step % 4) * 16 * kMiB;
  free_workspace(w, base + 8 * kMiB, 2 * kMiB);
  for (int j = 5; j >= 0; --j) free_activation(w, act_addr(w, step, j), kActSizes[j]);
  free_workspace(w, base, 6 * kMiB + (step % 7) * 4096);
}

__attribute__((noinline)) void vmm_grow(Worker& w, uint64_t slot) {
  Event c = make(HookId::cuMemCreate);
  c.set_size(32 * kMiB);
  c.set_aux(++w.handle_next);
  c.set_aux2((1ull << 32) | uint64_t(w.device));  // location: device
  emit(w, c);
  Event m = make(HookId::cuMemMap);
  m.set_addr(w.vmm_va + slot * 32 * kMiB);
  m.set_size(32 * kMiB);
  m.set_aux(w.handle_next);
  m.set_aux2(0);
  emit(w, m);
  w.live += 32 * kMiB;
}

__attribute__((noinline)) void vmm_shrink(Worker& w, uint64_t slot) {
  Event u = make(HookId::cuMemUnmap);
  u.set_addr(w.vmm_va + slot * 32 * kMiB);
  u.set_size(32 * kMiB);
  emit(w, u);
  Event r = make(HookId::cuMemRelease);
  r.set_aux(w.handle_next);
  emit(w, r);
  w.live -= 32 * kMiB;
}

__attribute__((noinline)) void loader_pinned(Worker& w) {
  if (w.host_buf) {
    Event f = make(HookId::cuMemFreeHost);
    f.set_addr(w.host_buf);
    emit(w, f);
  }
  uint64_t base = 0x7f5000000000ull + uint64_t(w.t->index) * kGiB;
  w.host_buf = w.host_buf == base ? base + 64 * kMiB : base;  // two buffers, alternately
  Event a = make(HookId::cuMemHostAlloc);
  a.set_addr(w.host_buf);
  a.set_size(64 * kMiB);
  a.set_aux(1);  // CU_MEMHOSTALLOC_PORTABLE
  emit(w, a);
}

__attribute__((noinline)) void optimizer_state(Worker& w, uint64_t step) {
  uint64_t addr = w.region + 3 * kGiB + (step % 3) * 128 * kMiB;
  Event a = make(HookId::cuMemAllocFromPoolAsync);
  a.set_addr(addr);
  a.set_size(96 * kMiB);
  a.set_aux(w.pool);
  a.set_stream(w.stream);
  emit(w, a);
  Event f = make(HookId::cuMemFreeAsync);
  f.set_addr(addr);
  f.set_stream(w.stream);
  emit(w, f);
}

__attribute__((noinline)) void slow_leak(Worker& w) {
  Event e = make(HookId::cuMemAlloc_v2);
  e.set_addr(w.leak_next);
  e.set_size(kMiB);
  emit(w, e);
  w.leak_next += kMiB;
  w.live += kMiB;
  w.t->leaked_bytes += kMiB;
}

__attribute__((noinline)) void oom(Worker& w) {
  Event e = make(HookId::cuMemAlloc_v2);
  e.result = kOom;
  e.set_size(96 * kGiB);
  e.free_bytes = kTotal > w.live * 4 ? kTotal - w.live * 4 : 0;
  e.total_bytes = kTotal;
  emit(w, e);
  w.t->failed++;
}

__attribute__((noinline)) void setup(Worker& w) {
  Event r = make(HookId::cuMemAddressReserve);
  r.set_addr(w.vmm_va);
  r.set_size(8 * kGiB);
  emit(w, r);
  Event p = make(HookId::cuMemPoolCreate);
  p.set_aux(w.pool);
  p.set_aux2((1ull << 32) | uint64_t(w.device));
  emit(w, p);
}

__attribute__((noinline)) void train_step(Worker& w, uint64_t step) {
  layer_a(w, step);
  layer_b(w, step);
  attention(w, step);
  if (step % 4 == 0) vmm_grow(w, (step / 4) % 8);
  if (step % 4 == 2) vmm_shrink(w, (step / 4) % 8);
  if (step % 16 == 0 && w.t->index % 2 == 1) loader_pinned(w);
  backward(w, step);
  if (step % 64 == 63) optimizer_state(w, step);
  if (step % 1000 == 999) slow_leak(w);
  if (step % 5000 == 4999) oom(w);
}

}  // namespace

void gen_run_thread(GenThread* t) {
  Worker w;
  w.t = t;
  uint64_t k = uint64_t(t->index);
  w.ctx = 0x55550000ull + 0x1000;  // one context, one device, as one rank of a job
  w.device = 0;
  w.region = 0x7f0000000000ull + k * 16 * kGiB;
  w.vmm_va = 0x200000000ull + k * 16 * kGiB;
  w.stream = 0x9000 + k;
  w.pool = 0xa000 + k;
  w.leak_next = 0x7e0000000000ull + k * 16 * kGiB;
  static const char* const kNames[] = {"gen-train", "gen-loader", "gen-stream", "gen-worker"};
  pthread_setname_np(pthread_self(), kNames[k % 4]);  // thread records carry the name
  setup(w);
  for (uint64_t step = 0; !w.done(); ++step) train_step(w, step);
}
