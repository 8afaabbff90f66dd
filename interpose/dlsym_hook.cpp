// The C half of the exported dlsym (dlsym_stub.S): lookups in an explicit handle, where a real
// driver function is swapped for our hook. This is how XLA, c10 and cudart (dlsym(handle,
// "cuGetProcAddress_v2")) reach the driver. (Finding glibc's dlsym, which the stub also uses, is
// the recorder's: driver_api.cpp.)
#include <dlfcn.h>

#include <cerrno>

#include "driver_api.h"
#include "activity_recorder.h"

extern "C" {

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
