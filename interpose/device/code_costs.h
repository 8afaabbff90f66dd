// The driver's free memory around context and code ops (format/accounting.h, rule 14): read for
// the device the op is about, through the calling thread's current context when it is on that
// device, else through a context of that device pushed for the read and popped right after (the
// thread's context stack is left as it was; nothing is created). And the table of (object,
// context) pairs whose lazy load was measured already: cuKernelGetFunction may be called before
// every launch, and costs two cuMemGetInfo calls only the first time. Lock-free, no allocation.
#pragma once

#include <cstdint>

namespace vt {

// Free bytes of `device` (-1: the current context's). False when no context of it is current
// and its primary context is not active.
bool free_on_device(int32_t device, uint64_t* free_bytes);
// Free bytes of the device of context `ctx`.
bool free_in_context(uint64_t ctx, uint64_t* free_bytes);
// True the first time (object, ctx) is asked. Once the table is full, false for every new pair:
// those loads are not measured (their cost stays in the report's unexplained remainder).
bool first_use(uint64_t object, uint64_t ctx);

}  // namespace vt
