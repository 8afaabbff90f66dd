// Module map records (path, load bias, address range, build-id) so that native addresses can be
// symbolized offline, on this machine or another. Written when a stack first needs them, and
// again when an address shows up that no recorded module covers (a library dlopen'ed later:
// PyTorch extensions, cuDNN).
#pragma once

#include <cstdint>

namespace vt {

// Writes records for modules covering `ips` that are not recorded yet. Only on the path that
// records a new stack, never per event.
void ensure_modules(const uint64_t* ips, int n, uint64_t t);

// After fork: the child's trace starts with no module records.
void forget_modules();

}  // namespace vt
