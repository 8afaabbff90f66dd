// libunwind, opened with RTLD_LOCAL instead of linked. libunwind.so.8 also exports GCC's unwinder
// ABI (_Unwind_RaiseException, _Unwind_Resume, ... without symbol versions); as a dependency of a
// preloaded library it sat in the process's global scope ahead of libgcc_s for every library
// loaded later, so C++ exceptions thrown in a traced Python process (PyTorch's c10::Error and
// OutOfMemoryError included) were unwound by libunwind's copy instead of libgcc_s's. Opened
// locally, its symbols serve our two calls and nobody else.
#pragma once

#include <cstdint>

namespace vt {

struct Unwinder {
  int (*backtrace)(void** out, int size);      // unw_backtrace
  void (*use_per_thread_caches)();             // unw_set_caching_policy(local, PER_THREAD)
  uintptr_t base;                              // where it is mapped (dl_phdr_info's dlpi_addr)
};

// The unwinder once opened; null when it could not be (native stacks are then off, and
// unwinder_error() says why).
const Unwinder* unwinder();
// Why it could not be opened (dlerror's line).
const char* unwinder_error();
// Opens it, at load (our constructor, before unwinder_fds.cpp patches its descriptors' calls).
// Nothing of libunwind runs here: its first call opens its pipe (native_stack.cpp makes it).
void open_unwinder();

}  // namespace vt
