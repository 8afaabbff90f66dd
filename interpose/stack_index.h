// Deduplication of call stacks: each distinct stack is written to the trace once (a kTagStack
// record) and events carry its id. Keyed by a 64-bit hash of the whole frame sequence in a
// lock-free, insert-only table; a per-thread cache of recent stacks skips even that.
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

// After fork: the child's trace starts with no stacks.
void forget_stacks();

}  // namespace vt
