// The accounting rules, written once: what memory each successful event makes live or frees.
// Used by the analyzer's replay (analyzer/live_state.cpp) and the in-process live tracker
// (interpose/live_tracker.cpp).
#pragma once

#include <cstdint>

#include "hook_list.h"

namespace vt {

// CUresult of an allocation that failed for lack of memory (CUDA_ERROR_OUT_OF_MEMORY).
inline constexpr int32_t kResultOutOfMemory = 2;
// An OOM: an acquire that failed with out of memory (other failures are bad arguments, a
// context gone...: not a lack of memory).
constexpr bool is_out_of_memory(const OpInfo& op, int32_t result) {
  return op.action == Action::Acquire && result == kResultOutOfMemory;
}

// The pool of a stream-ordered allocation that names none (cuMemAllocAsync: the device's current
// pool, whose handle the trace does not hold): a key of its own per device.
inline constexpr uint64_t kDefaultPoolTag = 0xdefa000000000000ull;
constexpr uint64_t default_pool_key(int32_t device) { return kDefaultPoolTag | uint32_t(device); }
constexpr bool is_default_pool_key(uint64_t key) { return (key >> 48) == (kDefaultPoolTag >> 48); }

}  // namespace vt
