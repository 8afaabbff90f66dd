// Per-thread state too big for the static TLS a preloaded library may take (the stack index's
// last record, the Python memo, the unwinder's walks): mapped, not taken from the heap, on the
// thread's first use and registered under a pthread key whose destructor unmaps it when the thread
// exits.
#pragma once

#include <pthread.h>
#include <sys/mman.h>

#include <cstddef>

namespace vt {

// A zero-filled block of `size` bytes registered under `key` for the calling thread; nullptr
// when it could not be mapped or registered (the caller goes without: correct, just slower).
inline void* map_thread_block(pthread_key_t key, size_t size) {
  void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  if (pthread_setspecific(key, m) != 0) {
    munmap(m, size);
    return nullptr;
  }
  return m;
}

}  // namespace vt
