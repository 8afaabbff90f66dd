// See backward_context.h.
#include "backward_context.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "clock.h"
#include "python_code_index.h"
#include "python_frames.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "reentry_guard.h"
#include "stack_capture.h"

namespace vt {

namespace {

struct Frames {
  uint32_t generation = 0;  // the trace whose code records describe the keys
  int n = 0;                // 0: nothing
  uint64_t keys[kMaxPythonFrames];
};

// One thread's publication. `owner` claims the slot; only the owner writes the rest. A reader
// copies, then checks that `seq` did not move (odd: a write in progress).
constexpr int kMaxNesting = 8;
struct Slot {
  std::atomic<long> owner{0};  // the publishing thread's id, 0 = free
  std::atomic<uint64_t> seq{0};
  std::atomic<uint32_t> generation{0};
  std::atomic<int> n{0};
  std::atomic<uint64_t> keys[kMaxPythonFrames];
  Frames saved[kMaxNesting];  // (the owner's own: what each nested call replaced)
};
constexpr int kSlots = 8;  // threads inside the engine at once that publish; more publish nothing
Slot g_slots[kSlots];
std::atomic<int> g_published{0};  // slots with n > 0

// The calling thread's slot while it is inside the engine, and how deep.
thread_local Slot* t_slot __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local int t_depth __attribute__((tls_model("initial-exec"))) = 0;

void publish(Slot* s, const Frames& f) {
  int before = s->n.load(std::memory_order_relaxed);
  uint64_t seq = s->seq.load(std::memory_order_relaxed);
  s->seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s->generation.store(f.generation, std::memory_order_relaxed);
  for (int i = 0; i < f.n; ++i) s->keys[i].store(f.keys[i], std::memory_order_relaxed);
  s->n.store(f.n, std::memory_order_relaxed);
  s->seq.store(seq + 2, std::memory_order_release);
  if (!before != !f.n) g_published.fetch_add(f.n ? 1 : -1, std::memory_order_relaxed);
}

void read_own(const Slot* s, Frames* f) {  // the owner only: no concurrent writer
  f->generation = s->generation.load(std::memory_order_relaxed);
  f->n = s->n.load(std::memory_order_relaxed);
  for (int i = 0; i < f->n; ++i) f->keys[i] = s->keys[i].load(std::memory_order_relaxed);
}

// The calling thread's frames. With the trace open, each code object is described in it now,
// while this thread runs them, and a worker that borrows the keys only looks their ids up.
// (Before the first memory event opens the trace, the first worker to borrow a key describes its
// code object: alive, since this thread's frames hold it while it waits in the engine.)
bool capture_own(Frames* f) {
  f->n = 0;
  if (!tracing_possible() || !python_frames_on()) return false;
  HookScope scope;
  if (scope.nested_in_our_work()) return false;
  uint64_t keys[kMaxPythonFrames];
  int k = py::capture_keys(keys, kMaxPythonFrames);
  bool describe = recording();
  uint64_t t = now_ns();
  for (int i = 0; i < k; ++i)
    if (!describe || python_code_id(py::unpack_key(keys[i]).code, t)) f->keys[f->n++] = keys[i];
  f->generation = g_generation.load(std::memory_order_relaxed);
  return f->n > 0;
}

Slot* claim_slot() {
  long tid = syscall(SYS_gettid);
  for (Slot& s : g_slots) {
    long free = 0;
    if (s.owner.load(std::memory_order_relaxed) == 0 && s.owner.compare_exchange_strong(free, tid)) return &s;
  }
  return nullptr;
}

}  // namespace

namespace {

// The frame borrower (stack_capture.h): one relaxed load when no thread is inside the engine.
int borrow_backward_frames(uint64_t* out, int max) {
  if (__builtin_expect(g_published.load(std::memory_order_relaxed) == 0, 1)) return 0;
  if (!py::thread_has_state()) return 0;  // NCCL's and other C threads: not the engine's workers
  Slot* only = nullptr;
  for (Slot& s : g_slots)
    if (s.n.load(std::memory_order_relaxed) > 0) {
      if (only) return 0;  // two threads in the engine: this event could be for either
      only = &s;
    }
  if (!only) return 0;
  uint64_t seq = only->seq.load(std::memory_order_acquire);
  if (seq & 1) return 0;  // being written: this event goes without, rather than wait
  int n = only->n.load(std::memory_order_relaxed);
  if (n <= 0 || only->generation.load(std::memory_order_relaxed) != g_generation.load(std::memory_order_relaxed))
    return 0;
  if (n > max) n = max;
  for (int i = 0; i < n; ++i) out[i] = only->keys[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return only->seq.load(std::memory_order_relaxed) == seq ? n : 0;
}

}  // namespace

void backward_enter() {
  set_frame_borrower(borrow_backward_frames);  // (the same pointer every time: no order to keep)
  int depth = t_depth++;
  Frames own;  // (0.5 KiB, once per engine call)
  bool have = capture_own(&own);
  if (depth == 0) {
    if (!have) return;  // no frames to lend
    t_slot = claim_slot();
  }
  Slot* s = t_slot;
  if (!s) return;
  if (depth < kMaxNesting) read_own(s, &s->saved[depth]);  // (what leaving this call puts back)
  if (have) publish(s, own);  // (else the caller's frames stay)
}

void backward_leave() {
  if (t_depth == 0) return;
  int depth = --t_depth;
  Slot* s = t_slot;
  if (!s) return;
  if (depth > 0) {
    if (depth < kMaxNesting) publish(s, s->saved[depth]);  // back in the caller's call: its frames
    return;
  }
  publish(s, Frames{});
  t_slot = nullptr;
  s->owner.store(0, std::memory_order_release);
}

void forget_backward_context() {
  for (Slot& s : g_slots) {  // (stores only where needed: each page stored to is copied into the child)
    if (s.owner.load()) s.owner.store(0);
    if (s.seq.load()) s.seq.store(0);
    if (s.n.load()) s.n.store(0);
  }
  g_published.store(0);
  t_slot = nullptr;
  t_depth = 0;
}

}  // namespace vt
