// Whether the stack the hook runs on has room to unwind. Unwinding (libunwind with its DWARF
// lookups, Python frames, our stack id and its records) needs up to kUnwindRoom below the
// recorder's frame (docs/security.md, "Stack use": measured by tests/programs/lifecycle.cpp's
// stack-use mode). A signal handler on a small alternate stack (glibc's SIGSTKSZ is 8 KiB) or a
// thread with a small stack would overflow it: without the room, the event is recorded without
// a stack, and a note in the trace says so once.
//
// The bounds, per thread in initial-exec TLS: the thread's own stack (RLIMIT_STACK below the
// stack's top for the main thread, pthread_getattr_np for the others: once per thread) and its
// alternate signal stack (queried once per thread, then kept up to date by libvramtrace's
// sigaltstack: signal_stacks.cpp). On a stack that is neither (a fiber's, a coroutine's) the room
// is not known and the hook unwinds as before.
#pragma once

#include <signal.h>

#include <cstdint>

namespace vt {

inline constexpr uint64_t kUnwindRoom = 16 << 10;

struct StackBounds {
  uint64_t lo = 0;                  // the lowest usable address of the thread's stack (0: not known)
  uint64_t hi = 0;                  // its end: above its outermost frame (0: not known)
  uint64_t alt_lo = 0, alt_hi = 0;  // its alternate signal stack [lo, hi) (0 0: none)
  bool learned = false;
};
extern __thread StackBounds t_stack_bounds __attribute__((tls_model("initial-exec")));

void learn_stack_bounds();  // once per thread (a few system calls)

// Read before every unwind: a few instructions once the thread's bounds are known.
inline bool unwind_room_ok() {
  if (__builtin_expect(!t_stack_bounds.learned, 0)) learn_stack_bounds();
  const uint64_t sp = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  const StackBounds& b = t_stack_bounds;
  const uint64_t lo = sp >= b.alt_lo && sp < b.alt_hi ? b.alt_lo : b.lo;
  return lo == 0 || sp < lo || sp - lo >= kUnwindRoom;
}

// The thread's alternate signal stack changed (sigaltstack with a new one, or SS_DISABLE).
void note_alt_stack(const stack_t* ss);

// Records, once per process, that an event went without a stack for want of room (a note record).
void note_short_stack(uint64_t t);

}  // namespace vt
