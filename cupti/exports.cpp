// The exported CUPTI wrappers (the list and why: wrapped_list.h) and where each forwards to.
// A wrapper tells the session another client is starting (which makes vramtrace step aside),
// then calls the real function with the caller's arguments untouched and returns its result
// (and with the caller's errno: our lookups and stepping aside never show in it).
#include <dlfcn.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <cupti.h>

#include "activity_recorder.h"
#include "recorder_port.h"  // port::real_dlsym
#include "library_search.h"
#include "cupti_session.h"
#include "wrapped_list.h"

namespace vt::cupti {

namespace {

std::atomic<void*> g_target[kWrappedCount];
void* wrapper_address(int id);

bool is_ours(void* p) {
  for (int i = 0; i < kWrappedCount; ++i)
    if (p == wrapper_address(i)) return true;
  return false;
}

// The function a wrapper forwards to: a dlsym(handle) swap remembered it, or the next
// definition after libvramtrace in the global scope (the libcupti the caller linked), or the
// libcupti we loaded, or any libcupti in the process.
void* target(int id) {
  void* p = g_target[id].load(std::memory_order_acquire);
  if (p) return p;
  const char* name = wrapped_name(id);
  p = port::real_dlsym(RTLD_NEXT, name);
  if ((!p || is_ours(p)) && cupti_handle()) p = port::real_dlsym(cupti_handle(), name);
  if (!p || is_ours(p)) {
    p = nullptr;
    char loaded[8][kMaxPath];
    int n = loaded_cuda_objects(loaded, 8);
    for (int i = 0; i < n && !p; ++i) {
      const char* b = strrchr(loaded[i], '/');
      if (strncmp(b ? b + 1 : loaded[i], "libcupti", 8) != 0) continue;  // libcudart, listed too
      if (void* h = dlopen(loaded[i], RTLD_NOLOAD | RTLD_LAZY)) p = port::real_dlsym(h, name);
      if (p && is_ours(p)) p = nullptr;
    }
  }
  if (p) {
    void* expected = nullptr;
    g_target[id].compare_exchange_strong(expected, p);
  }
  return p;
}

}  // namespace

void* swap_dlsym(const char* name, void* found) {
  if (!found || !name || strncmp(name, "cupti", 5) != 0) return found;
  for (int i = 0; i < kWrappedCount; ++i) {
    if (strcmp(name, wrapped_name(i)) != 0) continue;
    void* mine = wrapper_address(i);
    if (found == mine) return found;
    void* expected = nullptr;
    g_target[i].compare_exchange_strong(expected, found);
    return mine;
  }
  return found;
}

}  // namespace vt::cupti

extern "C" {

#define VT_CUPTI_WRAPPER(name, params, args)                                       \
  __attribute__((visibility("default"))) CUptiResult CUPTIAPI name params {       \
    using Fn = CUptiResult(CUPTIAPI*) params;                                      \
    int saved_errno = errno;                                                       \
    void* real = vt::cupti::target(vt::cupti::k_##name);                           \
    vt::cupti::on_foreign_call(vt::cupti::k_##name, real);                         \
    errno = saved_errno;                                                           \
    if (!real) return CUPTI_ERROR_NOT_INITIALIZED;                                 \
    return reinterpret_cast<Fn>(real) args;                                        \
  }
VT_CUPTI_WRAPPED(VT_CUPTI_WRAPPER)
#undef VT_CUPTI_WRAPPER

}  // extern "C"

namespace vt::cupti {
namespace {
void* wrapper_address(int id) {
  static void* const kAddr[] = {
#define VT_CUPTI_ADDR(name, params, args) reinterpret_cast<void*>(&::name),
      VT_CUPTI_WRAPPED(VT_CUPTI_ADDR)
#undef VT_CUPTI_ADDR
  };
  return id >= 0 && id < kWrappedCount ? kAddr[id] : nullptr;
}
}  // namespace
}  // namespace vt::cupti
