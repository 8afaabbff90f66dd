// Module map records (path, load bias, address range, build-id) so that native addresses can be
// symbolized offline, on this machine or another. Written when a stack first needs them, and
// again when an address shows up that no recorded module covers (a library dlopen'ed later:
// PyTorch extensions, cuDNN).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt {

// Writes records for modules covering `ips` that are not recorded yet. Only on the path that
// records a new stack, never per event.
void ensure_modules(const uint64_t* ips, int n, uint64_t t);

// After fork: the child's trace starts with no module records.
void forget_modules();

// The main program's file into `out` (NUL-terminated; "" if unknown). /proc/self/exe, except when
// the program was started through the dynamic loader (`ld.so --library-path ... prog`: the kernel
// ran ld.so, so /proc/self/exe names it while the main link map is prog): then the file mapped at
// the main map's address, from /proc/self/maps. Reads files: only where a module scan runs.
void main_program_path(char* out, size_t cap);

}  // namespace vt
