// The call stack of an event: native return addresses (native_stack.h) followed by the Python
// frames of the thread when it is running Python (python/), deduplicated into a stack id
// (stack_index.h). Called by the recorder for every event when stacks are on.
#pragma once

#include <atomic>
#include <cstdint>

#include "meta_records.h"
#include "op_table.h"
#include "native_stack.h"

namespace vt {

struct Config;

// Applies VRAMTRACE_STACK_DEPTH / VRAMTRACE_PYTHON when the trace opens; writes nothing.
void configure_stacks(const Config& cfg);

inline constexpr int kMaxPythonFrames = 64;
// Room for the deepest stack capture_stack can return.
inline constexpr int kMaxCaptureSlots = 256 + kMaxPythonFrames;

// After the native frames frames[0..n): one key per Python frame of the thread (py::capture_keys),
// when Python frames are on. Returns the slot count.
int add_python_frames(uint64_t* frames, int n);

// Captures the calling thread's stack (native frames, then one key per Python frame: py::capture_keys).
// Returns the slot count written into frames[0..cap). Inline: the unwinding starts in the caller's
// frame (native_stack.h, capture_native_here).
__attribute__((always_inline)) inline int capture_stack(uint64_t* frames, int cap, uint64_t caller_ip) {
  int n = capture_native_here(frames, cap - kMaxPythonFrames, caller_ip);
  return add_python_frames(frames, n);
}
// The same, the program's native frames left where the unwinder wrote them: the stack is at
// frames + *skip. `frames` has room for cap + kOwnFrames.
__attribute__((always_inline)) inline int capture_stack_in_place(uint64_t* frames, int cap, uint64_t caller_ip, int* skip) {
  int n = capture_native_in_place(frames, cap - kMaxPythonFrames, caller_ip, skip);
  return add_python_frames(frames + *skip, n);
}

// Where a thread with a Python thread state but no frames of its own gets some: a borrower writes
// frame keys (innermost first) into out[0..max) and returns how many, 0 for none. One at a time;
// backward_context.cpp registers PyTorch's autograd engine's (its workers borrow the frames of the
// thread waiting in the engine). A relaxed pointer: capture_stack reads it only when it found none.
using FrameBorrower = int (*)(uint64_t* out, int max);
void set_frame_borrower(FrameBorrower borrower);

// Dedups frames into an id, writing new stack, module and code records (0 for an empty stack).
uint32_t stack_id(const uint64_t* frames, int n, uint64_t t);

// Whether Python frames are being captured (for the thread records): format::kPythonOn and the
// config record's other values. Read on every event: inline.
extern std::atomic<int> g_python_state;
inline bool python_frames_on() { return g_python_state.load(std::memory_order_relaxed) == format::kPythonOn; }
// False when no frames at all are captured (VRAMTRACE_STACK_DEPTH=0 and no Python frames): the
// hook then skips the capture and the 2.5 KiB frame it needs.
inline bool stacks_wanted() { return native_stack_depth() != 0 || python_frames_on(); }
// Whether a driver-level free is unwound too (VRAMTRACE_FREE_STACKS=1; default: its stack is 0).
extern std::atomic<bool> g_free_stacks;
inline bool free_stacks_wanted() { return g_free_stacks.load(std::memory_order_relaxed) && stacks_wanted(); }
// Whether an event of this action gets a stack.
inline bool stack_wanted_for(Action a) { return a == Action::Release ? free_stacks_wanted() : stacks_wanted(); }

// A one-line description of the stack configuration for the trace (kTagConfig).
void write_stack_config(uint64_t t);

}  // namespace vt
