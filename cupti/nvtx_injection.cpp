// NVTX ranges reach CUPTI only through NVTX's injection hook: at a program's first NVTX call,
// NVTX dlopens the library named by NVTX_INJECTION64_PATH and calls its
// InitializeInjectionNvtx2(getExportTable). libcupti exports that function, but it must be the
// same libcupti copy vramtrace records with, and which copy that is is only known inside the
// process. So `vramtrace run` points NVTX_INJECTION64_PATH at libvramtrace.so itself (already
// preloaded: dlopen returns the same object) and this trampoline forwards to the
// InitializeInjectionNvtx2 of the libcupti vramtrace loads (loading it now if the trace has not
// opened yet). CUPTI then records NVTX ranges as CUPTI_ACTIVITY_KIND_MARKER once vramtrace
// enables that kind.
//
// Plain LD_PRELOAD (no `vramtrace run`): the constructor below points NVTX_INJECTION64_PATH at
// libvramtrace.so itself, before any program code (and so before the program's first NVTX call,
// when NVTX reads the variable), and only when all of these hold: the variable is unset or empty
// (a tool's own injection, e.g. Nsight's, is never replaced), we are preloaded (first in the
// global scope), kernels are not off (VRAMTRACE_KERNELS=0, VRAMTRACE_DISABLE) and no other tool
// is attached (other_tools.h). The program then sees that one variable more in its environment
// (and its children inherit it: a child without the preload gets 0 from the trampoline and NVTX
// stays a no-op there, as said below); docs/security.md lists it.
//
// NVTX's extension modules (payloads, counters: nvtxExtInit.h) look up
// InitializeInjectionNvtxExtension in the same library: forwarded to the libcupti's, if it has
// one, else 0 (the extension stays a no-op, as it would with no injection).
//
// When libvramtrace is not preloaded (a child that inherited the variable but not LD_PRELOAD),
// when kernels are off, or when another tool owns CUPTI, it returns 0: NVTX then unloads us and
// its calls stay no-ops, exactly as without any tool.
#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "recorder_port.h"
#include "cupti_session.h"
#include "other_tools.h"

extern char** environ;

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(vt::cupti::NvtxGetExportTable get);
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void* module_info);

namespace {
// Preloaded means our exports come first in the global scope; dlopen'ed by NVTX alone, they are
// not there. Asked through the main program's handle: RTLD_DEFAULT from inside libvramtrace
// would find our own definition first (we link -Bsymbolic).
bool preloaded() {
  void* main_program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
  void* global = main_program ? vt::cupti::port::real_dlsym(main_program, "InitializeInjectionNvtx2") : nullptr;
  return global == reinterpret_cast<void*>(&InitializeInjectionNvtx2);
}

int inject(vt::cupti::NvtxGetExportTable get) { return preloaded() ? vt::cupti::nvtx_inject(get) : 0; }

bool off(const char* name, bool zero_means_off) {
  const char* v = getenv(name);
  if (!v || !*v) return false;
  return zero_means_off ? strcmp(v, "0") == 0 : strcmp(v, "0") != 0;
}

__attribute__((constructor)) void point_nvtx_at_us() {
  int saved = errno;
  const char* current = getenv("NVTX_INJECTION64_PATH");
  char var[64];
  Dl_info self{};
  if ((!current || !*current) && !off("VRAMTRACE_KERNELS", true) && !off("VRAMTRACE_DISABLE", false) &&
      !vt::cupti::other_tool_in_env(environ, var, sizeof var) && preloaded() &&
      dladdr(reinterpret_cast<void*>(&InitializeInjectionNvtx2), &self) && self.dli_fname && self.dli_fname[0] == '/')
    setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1);
  errno = saved;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(vt::cupti::NvtxGetExportTable get) {
  int saved = errno;
  int r = inject(get);
  errno = saved;
  return r;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void* module_info) {
  int saved = errno;
  int r = preloaded() ? vt::cupti::nvtx_ext_inject(module_info) : 0;
  errno = saved;
  return r;
}
