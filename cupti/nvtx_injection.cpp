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
// When libvramtrace is not preloaded (a child that inherited the variable but not LD_PRELOAD),
// when kernels are off, or when another tool owns CUPTI, it returns 0: NVTX then unloads us and
// its calls stay no-ops, exactly as without any tool.
#include <dlfcn.h>

#include <cerrno>

#include "recorder_port.h"
#include "cupti_session.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(vt::cupti::NvtxGetExportTable get);

namespace {
int inject(vt::cupti::NvtxGetExportTable get) {
  // Preloaded means our exports come first in the global scope; dlopen'ed by NVTX alone, they are
  // not there. Asked through the main program's handle: RTLD_DEFAULT from inside libvramtrace
  // would find our own definition first (we link -Bsymbolic).
  void* main_program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
  void* global = main_program ? vt::cupti::port::real_dlsym(main_program, "InitializeInjectionNvtx2") : nullptr;
  if (global != reinterpret_cast<void*>(&InitializeInjectionNvtx2)) return 0;
  return vt::cupti::nvtx_inject(get);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(vt::cupti::NvtxGetExportTable get) {
  int saved = errno;
  int r = inject(get);
  errno = saved;
  return r;
}
