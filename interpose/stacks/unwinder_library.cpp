// See unwinder_library.h.
#include "load_steps.h"
#include "unwinder_library.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>

#include <cerrno>
#include <cstdio>

// The file to open: libunwind's soname, or in a portable build (the wheel) the renamed copy beside
// libvramtrace.so, found through its RUNPATH $ORIGIN (cmake/portable.cmake). dlopen resolves a
// bare name with the RUNPATH of the library that calls it, which is ours.
#ifndef VT_UNWIND_LIBRARY
#define VT_UNWIND_LIBRARY "libunwind.so.8"
#endif

// libunwind's entry points are macros naming per-architecture symbols (_ULx86_64_...).
#define VT_STRINGIFY_(x) #x
#define VT_STRINGIFY(x) VT_STRINGIFY_(x)

namespace vt {

namespace {

Unwinder g_unwinder;
bool g_open = false;
char g_error[256];
int (*g_set_caching)(unw_addr_space_t, unw_caching_policy_t);
unw_addr_space_t* g_local_space;

void set_error(const char* what) {
  const char* why = dlerror();
  snprintf(g_error, sizeof g_error, "%s: %s", what, why ? why : "not found");
}

void use_per_thread_caches() { g_set_caching(*g_local_space, UNW_CACHE_PER_THREAD); }

}  // namespace

const Unwinder* unwinder() { return g_open ? &g_unwinder : nullptr; }
const char* unwinder_error() { return g_error[0] ? g_error : "libunwind was not opened"; }

void open_unwinder() {
  if (g_open) return;
  int saved = errno;
  void* lib = dlopen(VT_UNWIND_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  link_map* map = nullptr;
  if (!lib) {
    set_error("cannot open " VT_UNWIND_LIBRARY);
  } else {
    g_unwinder.backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(lib, "unw_backtrace"));
    g_set_caching = reinterpret_cast<decltype(g_set_caching)>(dlsym(lib, VT_STRINGIFY(unw_set_caching_policy)));
    g_local_space = static_cast<unw_addr_space_t*>(dlsym(lib, VT_STRINGIFY(unw_local_addr_space)));
    if (!g_unwinder.backtrace || !g_set_caching || !g_local_space || dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map) {
      set_error(VT_UNWIND_LIBRARY " lacks unw_backtrace or unw_set_caching_policy");
    } else {
      g_unwinder.use_per_thread_caches = use_per_thread_caches;
      g_unwinder.base = map->l_addr;
      g_open = true;
    }
  }
  errno = saved;
}

}  // namespace vt

namespace vt::load_steps {
void open_unwinder() { vt::open_unwinder(); }
}  // namespace vt::load_steps
