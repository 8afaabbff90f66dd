// The hook's own unwinder: libunwind's fast trace (the common x86-64 frame from DWARF call frame
// information, frame_rules.h, cached per thread by address), plus a memo of the thread's last
// walk. Consecutive events of a thread mostly share the outer part of their stacks (the training
// loop, the interpreter, main); where this walk reaches a frame of the last one (same address,
// same stack pointer, same rbp) and every stack word the last walk read above it still holds what
// it read, the rest of the walk would read the same words with the same rules: it is the last
// walk's, copied instead of walked. The check reads two words a frame with no dependency between
// frames; walking reads them in a chain (docs/PERFORMANCE.md, "With call stacks").
//
// Whatever is not the common form (a signal frame, a frame without call frame information, an
// alternate signal stack, a stack whose bounds are unknown) is left to libunwind: the caller gets
// -1 and calls unw_backtrace, so the frames are libunwind's either way. VRAMTRACE_UNWINDER=libunwind
// turns this one off. x86-64 only: on other machines every stack is libunwind's.
#pragma once

#include <atomic>
#include <cstdint>

namespace vt {

// unw_backtrace's contract: out[0..max) gets the return addresses of the frames above this
// function's own, innermost first (out[0] is the return address into its caller); returns their
// count. -1: this stack is libunwind's to walk.
int fast_backtrace(void** out, int max);

// VRAMTRACE_UNWINDER: 0 libunwind only, 1 this one first (the default), 2 this one checked against
// libunwind on every stack (tests: the differences are counted and printed at exit).
enum class UnwinderMode : int { Libunwind = 0, Fast = 1, Checked = 2 };
extern std::atomic<int> g_unwinder_mode;
inline UnwinderMode unwinder_mode() { return UnwinderMode(g_unwinder_mode.load(std::memory_order_relaxed)); }

// Checked mode: counts each stack by what came of it.
enum class CheckedWalk { Same, Differed, LibunwindOnly };
void count_checked_walk(CheckedWalk outcome);

}  // namespace vt
