// Native call stacks: return addresses of the calling thread from DWARF call frame information
// (works through code built without frame pointers: distribution libraries, libpython, torch):
// the hook's own walk (fast_unwind.h), else libunwind's, with libvramtrace's own frames removed.
// No lock of ours is held while unwinding.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "fast_unwind.h"

namespace vt {

inline constexpr int kMaxStackDepth = 256;
// Our own frames (hook, recorder) the unwinder walks before the program's.
inline constexpr int kOwnFrames = 8;

// Sets the depth (0 = stacks off). Called when the trace opens.
void configure_native_stacks(int depth);
// Read on every event (stack_capture.h's stacks_wanted): inline.
extern std::atomic<int> g_native_depth;
inline int native_stack_depth() { return g_native_depth.load(std::memory_order_relaxed); }

// Fills out[0..max) innermost first; returns the count (0 when stacks are off). `out` has room for
// max + kOwnFrames (the walk writes our own frames there first). Frames up to
// `caller_ip` (the return address into the program, taken where it entered vramtrace) are ours
// and dropped; without it, frames inside libvramtrace's mapping are.
int capture_native(uint64_t* out, int max, uint64_t caller_ip);

namespace native_detail {
extern int (*g_backtrace)(void**, int);  // unw_backtrace of the copy we opened (unwinder_library.h)
// How many of the walk's first frames are ours (those before caller_ip).
int own_frames(const uint64_t* out, int n, uint64_t caller_ip);
// VRAMTRACE_UNWINDER=checked: walks again with libunwind and compares the program's frames.
void check_walk(const uint64_t* out, int n, int size, uint64_t caller_ip);
}  // namespace native_detail

// capture_native, inlined into its caller, leaving the program's frames where the walk wrote them,
// at out[*skip] (the recorder's capture: moving ~30 frames to out[0] was ~35 instructions per
// stack). The unwinder starts in the caller's frame, and every frame of ours it does not walk
// saves ~40 instructions per stack (libunwind's cached trace). The recorder's capture inlines it
// (stack_capture.h), so an event's walk begins two frames above the program's instead of six.
__attribute__((always_inline)) inline int capture_native_in_place(uint64_t* out, int max, uint64_t caller_ip, int* skip) {
  *skip = 0;
  int depth = g_native_depth.load(std::memory_order_relaxed);
  if (depth == 0) return 0;
  int (*backtrace)(void**, int) = __atomic_load_n(&native_detail::g_backtrace, __ATOMIC_ACQUIRE);
  if (!backtrace) return 0;
  static_assert(sizeof(void*) == sizeof(uint64_t));
  const int size = (depth < max ? depth : max) + kOwnFrames;
  const UnwinderMode mode = unwinder_mode();
  int n = mode == UnwinderMode::Libunwind ? -1 : fast_backtrace(reinterpret_cast<void**>(out), size);
  if (n < 0) {
    if (__builtin_expect(mode == UnwinderMode::Checked, 0)) count_checked_walk(CheckedWalk::LibunwindOnly);
    n = backtrace(reinterpret_cast<void**>(out), size);
  } else if (__builtin_expect(mode == UnwinderMode::Checked, 0)) native_detail::check_walk(out, n, size, caller_ip);
  int own = native_detail::own_frames(out, n, caller_ip);
  int count = n - own;
  if (count > depth) count = depth;
  if (count > max) count = max;
  if (count <= 0) return 0;
  *skip = own;
  return count;
}

// The same with the frames moved to out[0].
__attribute__((always_inline)) inline int capture_native_here(uint64_t* out, int max, uint64_t caller_ip) {
  int skip;
  int n = capture_native_in_place(out, max, caller_ip, &skip);
  if (skip && n > 0) memmove(out, out + skip, size_t(n) * sizeof *out);
  return n;
}

}  // namespace vt
