// Named regions of the program in the trace (kTagRegion records): see region_marks.cpp.
#pragma once

#include <cstdint>

namespace vt {

// Writes a region begin or end (format::kRegionBegin / kRegionEnd) now, or keeps a begin until the
// trace opens. 0, or -1 when tracing is off or `name` is null. Leaves errno to the caller.
int region(uint8_t kind, const char* name);
void forget_region_lock();  // after fork, in the child (its holder may have been another thread)

}  // namespace vt
