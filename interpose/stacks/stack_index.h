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
// The 64-bit hash of frames[0..n), continuing from `seed` (0: a whole stack on its own). Inline:
// it runs once per stack captured. Four lanes, frame i in lane i % 4, each step
// x -> rotl((x ^ frame) * odd, r): a bijection of the lane for each frame, so two stacks that
// differ in one frame never collide; the lanes are joined by odd multipliers (a change in one
// lane changes the sum) and a final mix. Three instructions a frame: the two-lane
// multiply-xorshift it replaced took six and a half (docs/PERFORMANCE.md).
namespace stack_hash_detail {
inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
}  // namespace stack_hash_detail
inline uint64_t hash_frames(const uint64_t* f, int n, uint64_t seed) {
  constexpr uint64_t k0 = 0xff51afd7ed558ccdull, k1 = 0xc4ceb9fe1a85ec53ull, k2 = 0x9e3779b97f4a7c15ull,
                     k3 = 0xd6e8feb86659fd93ull;
  uint64_t a = 0x9e3779b97f4a7c15ull ^ uint64_t(n) ^ seed, b = 0xc2b2ae3d27d4eb4full ^ seed,
           c = 0x165667b19e3779f9ull ^ seed, d = 0x27d4eb2f165667c5ull ^ seed;
  int i = 0;
  for (; i + 3 < n; i += 4) {
    a = stack_hash_detail::rotl((a ^ f[i]) * k0, 29);
    b = stack_hash_detail::rotl((b ^ f[i + 1]) * k1, 31);
    c = stack_hash_detail::rotl((c ^ f[i + 2]) * k2, 27);
    d = stack_hash_detail::rotl((d ^ f[i + 3]) * k3, 33);
  }
  for (; i < n; ++i) a = stack_hash_detail::rotl((a ^ f[i]) * k0, 29);  // (n is in a's seed)
  uint64_t h = (a + b * k2 + c * k3 + d * k1) * k0;
  h ^= h >> 33;
  h *= k1;
  h ^= h >> 29;
  return h ? h : 1;  // 0 marks an empty slot
}

// After fork: the child's trace starts with no stacks.
void forget_stacks();

}  // namespace vt
