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

// The published frames. Written by the main thread only; read by any thread without waiting: a
// reader copies, then checks that `seq` did not move (odd: a write in progress).
struct Published {
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> ts{0}, frame{0};  // the main thread's state and its innermost frame then
  std::atomic<uint32_t> generation{0};    // the trace whose code records describe the keys
  std::atomic<int> n{0};                  // 0: nothing published
  std::atomic<uint64_t> keys[kMaxPythonFrames];
};
Published g_pub;

// What a nested entry replaced, put back when it leaves. Touched by the main thread only.
struct Saved {
  uint64_t ts, frame;
  uint32_t generation;
  int n;
  uint64_t keys[kMaxPythonFrames];
};
constexpr int kMaxNesting = 8;
Saved g_saved[kMaxNesting];
int g_depth = 0;  // engine calls the main thread is inside (deeper ones than kMaxNesting: counted)

bool on_main_thread() { return syscall(SYS_gettid) == getpid(); }

void write(const Saved& s) {
  uint64_t seq = g_pub.seq.load(std::memory_order_relaxed);
  g_pub.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  g_pub.ts.store(s.ts, std::memory_order_relaxed);
  g_pub.frame.store(s.frame, std::memory_order_relaxed);
  g_pub.generation.store(s.generation, std::memory_order_relaxed);
  g_pub.n.store(s.n, std::memory_order_relaxed);
  for (int i = 0; i < s.n; ++i) g_pub.keys[i].store(s.keys[i], std::memory_order_relaxed);
  g_pub.seq.store(seq + 2, std::memory_order_release);
}

void read_published(Saved* s) {  // main thread only: no concurrent writer
  s->ts = g_pub.ts.load(std::memory_order_relaxed);
  s->frame = g_pub.frame.load(std::memory_order_relaxed);
  s->generation = g_pub.generation.load(std::memory_order_relaxed);
  s->n = g_pub.n.load(std::memory_order_relaxed);
  for (int i = 0; i < s->n; ++i) s->keys[i] = g_pub.keys[i].load(std::memory_order_relaxed);
}

// The calling (main) thread's frames. With the trace open, each code object is described in it
// now, while this thread runs them, and a worker that borrows the keys only looks their ids up.
// (Before the first memory event opens the trace, the first worker to borrow a key describes its
// code object: alive, since this thread's frames hold it while it waits in the engine.)
bool capture_own(Saved* s) {
  if (!tracing_possible() || !python_frames_on()) return false;
  HookScope scope;
  if (scope.nested_in_our_work()) return false;
  py::Position at = py::this_thread_position();
  if (!at.ts || !at.frame) return false;
  uint64_t keys[kMaxPythonFrames];
  int k = py::capture_keys(keys, kMaxPythonFrames);
  bool describe = recording();
  uint64_t t = now_ns();
  s->n = 0;
  for (int i = 0; i < k; ++i)
    if (!describe || python_code_id(py::unpack_key(keys[i]).code, t)) s->keys[s->n++] = keys[i];
  s->ts = at.ts;
  s->frame = at.frame;
  s->generation = g_generation.load(std::memory_order_relaxed);
  return s->n > 0;
}

}  // namespace

void backward_enter() {
  if (!on_main_thread()) return;
  int depth = g_depth++;
  if (depth < kMaxNesting) read_published(&g_saved[depth]);
  static Saved now;  // (main thread only; 0.5 KiB off its stack)
  if (capture_own(&now)) write(now);
  else if (g_pub.n.load(std::memory_order_relaxed)) write(Saved{});
}

void backward_leave() {
  if (!on_main_thread() || g_depth == 0) return;
  int depth = --g_depth;
  write(depth < kMaxNesting ? g_saved[depth] : Saved{});
}

bool backward_frames_published() { return g_pub.n.load(std::memory_order_relaxed) != 0; }

int borrow_backward_frames(uint64_t* out, int max) {
  if (!py::thread_has_state()) return 0;  // NCCL's and other C threads: not the engine's workers
  uint64_t seq = g_pub.seq.load(std::memory_order_acquire);
  if (seq & 1) return 0;  // being written: this event goes without, rather than wait
  uint64_t ts = g_pub.ts.load(std::memory_order_relaxed), frame = g_pub.frame.load(std::memory_order_relaxed);
  int n = g_pub.n.load(std::memory_order_relaxed);
  if (n <= 0 || g_pub.generation.load(std::memory_order_relaxed) != g_generation.load(std::memory_order_relaxed))
    return 0;
  if (n > max) n = max;
  for (int i = 0; i < n; ++i) out[i] = g_pub.keys[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (g_pub.seq.load(std::memory_order_relaxed) != seq) return 0;
  // Still inside the engine? Its innermost Python frame has not moved (an exception that left the
  // engine without our frame seeing it would have moved it). The main thread's state outlives it.
  if (py::current_frame_of(ts) != frame) return 0;
  return n;
}

void forget_backward_context() {
  g_depth = 0;
  g_pub.seq.store(0);  // (a fork in the middle of the main thread's write left it odd)
  write(Saved{});
}

}  // namespace vt
