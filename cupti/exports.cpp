// The exported CUPTI wrappers (the list and why: wrapped_list.h) and where each forwards to.
// A wrapper tells the session another client is starting (which makes vramtrace step aside),
// then calls the real function (the libcupti the *caller* uses: target()) with the caller's
// arguments (buffer callbacks excepted: rewrite_args), tells the session the call returned (an
// unsubscribe lets vramtrace take CUPTI back) and returns its result with the errno the real
// function left (our lookups and stepping aside never show in it).
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

// The function a wrapper forwards to, for a call from `caller` (its return address):
//   1. a dlsym(handle) swap remembered it (the caller asked that libcupti by name);
//   2. the libcupti the caller's own object depends on: dladdr names the object, dlopen
//      (RTLD_NOLOAD) of that path gives its handle, and dlsym(handle) searches the object and its
//      dependencies, in load order (never vramtrace, which is preloaded, not a dependency). This
//      is Kineto inside libtorch_cuda.so, loaded RTLD_LOCAL by Python with its own libcupti: not
//      in the global scope, and not the copy vramtrace loaded;
//   3. the next definition after libvramtrace in the global scope (a main program that links
//      libcupti: its own handle's search would find our wrapper first);
//   4. the libcupti we loaded, then any libcupti in the process.
// Only 1 is remembered: two clients in two objects may use two copies.
void* for_caller(const char* name, void* caller) {
  Dl_info info{};
  if (!caller || !dladdr(caller, &info) || !info.dli_fname || !info.dli_fname[0]) return nullptr;
  void* h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return nullptr;
  void* p = port::real_dlsym(h, name);
  dlclose(h);  // NOLOAD took a reference; the object stays loaded
  return p && !is_ours(p) ? p : nullptr;
}

void* target(int id, void* caller) {
  void* p = g_target[id].load(std::memory_order_acquire);
  if (p) return p;
  const char* name = wrapped_name(id);
  p = for_caller(name, caller);
  if (p) return p;
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
  return p;
}

// The buffer callbacks a client registers are replaced by the session's trampolines (which keep
// vramtrace's own buffers from reaching them); every other call passes its arguments untouched.
template <class... A>
void rewrite_args(A&...) {}
void rewrite_args(CUpti_BuffersCallbackRequestFunc& rq, CUpti_BuffersCallbackCompleteFunc& cm) {
  their_buffer_callbacks(&rq, &cm);
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
  __attribute__((visibility("default"), noinline)) CUptiResult CUPTIAPI name params { \
    using Fn = CUptiResult(CUPTIAPI*) params;                                      \
    int saved_errno = errno;                                                       \
    void* caller = __builtin_extract_return_addr(__builtin_return_address(0));     \
    void* real = vt::cupti::target(vt::cupti::k_##name, caller);                   \
    vt::cupti::on_foreign_call(vt::cupti::k_##name, real);                         \
    vt::cupti::rewrite_args args;                                                  \
    errno = saved_errno;                                                           \
    if (!real) return CUPTI_ERROR_NOT_INITIALIZED;                                 \
    CUptiResult result = reinterpret_cast<Fn>(real) args;                          \
    saved_errno = errno;                                                           \
    vt::cupti::after_foreign_call(vt::cupti::k_##name, result);                    \
    errno = saved_errno;                                                           \
    return result;                                                                 \
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
