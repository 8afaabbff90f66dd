// Python code objects seen in stacks: each gets a small id, and its file, qualified name, first
// line and raw line table are written to the trace once (kTagPyCode), so lines are computed
// offline. Keyed by the code object's address in a lock-free insert-only table. (A code object
// freed and another allocated at the same address would keep the first one's description; code
// objects of a running program are rarely freed.)
#pragma once

#include <cstdint>

namespace vt {

// The id of the live code object at `code` (the calling thread is running it right now), or 0
// when it cannot be described.
uint32_t python_code_id(uint64_t code, uint64_t t);

void forget_python_codes();  // after fork

}  // namespace vt
