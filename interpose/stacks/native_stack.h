// Native call stacks: return addresses of the calling thread from libunwind's DWARF unwinder
// (works through code built without frame pointers: distribution libraries, libpython, torch),
// with libvramtrace's own frames removed. No lock of ours is held while unwinding.
#pragma once

#include <atomic>
#include <cstdint>

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

}  // namespace vt
