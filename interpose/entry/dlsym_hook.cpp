// The C half of the exported dlsym and dlvsym (dlsym_stub.S): lookups in an explicit handle, where a real
// driver function is swapped for our hook. This is how XLA, c10 and cudart (dlsym(handle,
// "cuGetProcAddress_v2")) reach the driver. (Finding glibc's dlsym, which the stub also uses, is
// the recorder's: driver_api.cpp.)
#include <dlfcn.h>

#include <cerrno>

#include "driver_api.h"
#include "lookup_gaps.h"
#include "activity_recorder.h"

extern "C" {

namespace {

// What a lookup of `name` in an explicit handle hands out: our hook for a driver function.
void* swap_driver_lookup(const char* name, void* p) {
  int saved = errno;  // what dlsym left; our lookups below must not show
  // Driver entry points all start with "cu"; anything else cannot be substituted.
  if (p && name && name[0] == 'c' && name[1] == 'u' && vt::driver_resolved()) {
    void* real = p;
    p = vt::substitute(real);
    vt::note_lookup(name, p != real, 0, 0);  // a memory entry point handed out unhooked is recorded
  }
  // Another CUPTI client looking up libcupti by handle (JAX/XLA, TensorFlow) gets our wrapper.
  if (p && name && name[0] == 'c' && name[1] == 'u' && name[2] == 'p') p = vt::cupti::swap_dlsym(name, p);
  errno = saved;
  return p;
}

}  // namespace

__attribute__((visibility("hidden"))) void* vt_dlsym_handle(void* handle, const char* name) {
  return swap_driver_lookup(name, vt::real_dlsym(handle, name));
}

// dlvsym finds a function without a version only in an object without a version table, which a
// libcuda may be (the toolkit's stub is); the swap is the same.
__attribute__((visibility("hidden"))) void* vt_dlvsym_handle(void* handle, const char* name, const char* version) {
  return swap_driver_lookup(name, vt::real_dlvsym(handle, name, version));
}

}  // extern "C"
