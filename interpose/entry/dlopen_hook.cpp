// The C half of the exported dlopen and dlmopen (dlopen_stub.S): finds glibc's functions once and
// notes the opens no hook can reach, before they run. A library opened with RTLD_DEEPBIND looks
// symbols up in its own dependencies before the preloaded libvramtrace (its dlsym is libc's, its
// cu* calls bind to libcuda); one dlmopen'ed into another namespace does not see libvramtrace at
// all. Their driver calls cannot be hooked from here (docs/interception.md, "Known gaps"), so the
// report says they happened. Nothing here changes what the caller's dlopen does or leaves in errno.
#include <dlfcn.h>

#include <cerrno>

#include "lookup_gaps.h"

extern "C" {

__attribute__((visibility("hidden"))) void* vt_real_dlopen_ptr = nullptr;
__attribute__((visibility("hidden"))) void* vt_real_dlmopen_ptr = nullptr;

namespace {

// glibc's default version first (2.34 moved libdl into libc; both versions are one function).
void* resolve(void** slot, const char* name) {
  void* fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (fn) return fn;
#if defined(__x86_64__)
  fn = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
#elif defined(__aarch64__)
  fn = dlvsym(RTLD_NEXT, name, "GLIBC_2.17");
#endif
  if (!fn) fn = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
  if (!fn) fn = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.4");  // dlmopen's first version
  __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  return fn;
}

}  // namespace

// The stub calls these only on its slow path: the first call, or an open out of the hooks' reach.
// They return the real function for the stub to tail-jump to (nullptr: none, the stub returns NULL).
__attribute__((visibility("hidden"))) void* vt_dlopen_slow(const char* file, int mode) {
  int saved = errno;
  void* fn = resolve(&vt_real_dlopen_ptr, "dlopen");
  if (mode & RTLD_DEEPBIND) vt::note_isolated_open(file, mode, false);
  errno = saved;
  return fn;
}

__attribute__((visibility("hidden"))) void* vt_dlmopen_slow(Lmid_t lmid, const char* file, int mode) {
  int saved = errno;
  void* fn = resolve(&vt_real_dlmopen_ptr, "dlmopen");
  if (lmid != LM_ID_BASE || (mode & RTLD_DEEPBIND)) vt::note_isolated_open(file, mode, lmid != LM_ID_BASE);
  errno = saved;
  return fn;
}

// Called by the LD_AUDIT module (audit_module.cpp) once the process's start is relocated.
__attribute__((visibility("default"))) void vt_audit_attach() { vt::note_audit_attached(); }

}  // extern "C"
