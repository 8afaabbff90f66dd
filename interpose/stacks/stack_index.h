// Deduplication of call stacks: each distinct stack is written to the trace once and events
// carry its id. A new stack is written as a delta of the last stack record this thread wrote
// (kTagStackDelta: the frames shared at either end are kept by count, the rest as small
// differences) or whole (kTagStack) when it shares nothing. Keyed by a 64-bit hash of the whole
// frame sequence in a lock-free, insert-only table that grows by levels (nothing moves); a
// per-thread cache of recent stacks skips even that.
// (A 64-bit hash collision between two different stacks would merge them: for a million distinct
// stacks the chance is about 3e-8.)
#pragma once

#include <cstdint>

namespace vt {

// The id (>= 1) of the stack frames[0..n) (innermost first), writing its record, and the module
// records its native addresses need, the first time it is seen. 0 when n == 0.
// `to_trace` turns the captured frames into the ones written (returns their count).
using TraceFrames = int (*)(const uint64_t* key, int n, uint64_t* out, uint64_t t);
uint32_t intern_stack(const uint64_t* frames, int n, uint64_t t, TraceFrames to_trace);
// The same with the hash already computed (by stack_capture.cpp, which reuses the hash of a
// thread's unchanged Python part: hash_frames(frames, py_from, hash_frames(python part, 0))).
uint32_t intern_stack_hashed(const uint64_t* frames, int n, uint64_t hash, uint64_t t, TraceFrames to_trace);
// The 64-bit hash of frames[0..n), continuing from `seed` (0: a whole stack on its own).
uint64_t hash_frames(const uint64_t* f, int n, uint64_t seed);

// After fork: the child's trace starts with no stacks.
void forget_stacks();

}  // namespace vt
