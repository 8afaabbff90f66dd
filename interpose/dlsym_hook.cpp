// The C half of the exported dlsym (dlsym_stub.S): finding glibc's dlsym, and lookups in an
// explicit handle, where a real driver function is swapped for our hook. This is how XLA, c10
// and cudart (dlsym(handle, "cuGetProcAddress_v2")) reach the driver.
#include <dlfcn.h>

#include <cerrno>

#include "driver_api.h"
#include "kernel_activity.h"

extern "C" {

__attribute__((visibility("hidden"))) void* vt_real_dlsym_ptr = nullptr;

__attribute__((visibility("hidden"))) void* vt_resolve_real_dlsym() {
  void* fn = __atomic_load_n(&vt_real_dlsym_ptr, __ATOMIC_ACQUIRE);
  if (fn) return fn;
  int saved = errno;
  // dlvsym is not ours, so RTLD_NEXT here means "after libvramtrace": glibc's dlsym.
#if defined(__x86_64__)
  fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
#elif defined(__aarch64__)
  fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
#endif
  if (!fn) fn = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  __atomic_store_n(&vt_real_dlsym_ptr, fn, __ATOMIC_RELEASE);
  errno = saved;
  return fn;
}

__attribute__((visibility("hidden"))) void* vt_dlsym_handle(void* handle, const char* name) {
  void* p = vt::real_dlsym(handle, name);
  int saved = errno;  // what dlsym left; our lookups below must not show
  // Driver entry points all start with "cu"; anything else cannot be substituted.
  if (p && name && name[0] == 'c' && name[1] == 'u' && vt::driver_resolved()) p = vt::substitute(p);
  // Another CUPTI client looking up libcupti by handle (JAX/XLA, TensorFlow) gets our wrapper.
  if (p && name && name[0] == 'c' && name[1] == 'u' && name[2] == 'p') p = vt::cupti::swap_dlsym(name, p);
  errno = saved;
  return p;
}

}  // extern "C"
