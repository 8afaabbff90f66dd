// api_module.cpp — code and what it costs: cuModuleLoad, cuModuleLoadData(Ex),
// cuModuleLoadFatBinary, cuModuleUnload, cuModuleGetFunction, and the context-independent
// libraries: cuLibraryLoadData, cuLibraryLoadFromFile, cuLibraryUnload, cuLibraryGetModule,
// cuLibraryGetKernel, cuKernelGetFunction, cuKernelGetLibrary.
//
// Model: a module loaded into a context costs its device FAKECUDA_MODULE_BYTES (default 2 MiB,
// one page: code and static data of a small cubin) until it is unloaded or its context goes.
// Nothing is parsed: the image is opaque. A library is loaded into the current context at
// cuLibraryLoad* when CUDA_MODULE_LOADING=EAGER; with the default lazy loading it costs nothing
// until a context first needs it (cuLibraryGetModule, cuKernelGetFunction), and then once per
// context — the cuMemGetInfo change appears at that later call, as on a real driver.
#include "config.h"
#include "state.h"

#include <fcntl.h>
#include <unistd.h>

using namespace fc;

namespace {

CUresult load_module(State &s, CUcontext ctx, CUlibrary lib, CUmodule *out) {
  const Bytes cost = config().module_bytes;
  if (cost)
    if (CUresult r = charge(s.devices[s.ctxs[ctx].device], cost)) return r;
  CUmodule h = new_handle_as<CUmodule>(s, 11);
  s.modules[h] = Module{ctx, cost, lib};
  *out = h;
  return CUDA_SUCCESS;
}

void unload(State &s, std::map<CUmodule, Module>::iterator it) {
  const Module &m = it->second;
  if (m.charged) uncharge(s.devices[s.ctxs[m.ctx].device], m.charged);
  if (m.library) s.libraries[m.library].modules.erase(m.ctx);
  s.modules.erase(it);
}

CUresult module_load(CUmodule *module, const void *image) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  return load_module(s, ctx, nullptr, module);
}

bool readable(const char *path) {
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return false;
  close(fd);
  return true;
}

// The library's module in the current context, loading it there on first need.
CUresult library_module(State &s, CUlibrary lib, CUmodule *out) {
  auto it = s.libraries.find(lib);
  if (it == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  auto m = it->second.modules.find(ctx);
  if (m != it->second.modules.end()) {
    *out = m->second;
    return CUDA_SUCCESS;
  }
  CUmodule mod;
  if (CUresult r = load_module(s, ctx, lib, &mod)) return r;
  s.libraries[lib].modules[ctx] = mod;
  *out = mod;
  return CUDA_SUCCESS;
}

CUresult library_load(CUlibrary *library, bool ok_input) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  if (!ok_input) return CUDA_ERROR_FILE_NOT_FOUND;
  CUlibrary h = new_handle_as<CUlibrary>(s, 12);
  Library &lib = s.libraries[h];
  lib.lazy = config().lazy_loading;
  CUcontext ctx;
  if (!lib.lazy && current_ctx(s, &ctx) == CUDA_SUCCESS) {
    CUmodule mod;
    if (CUresult r = library_module(s, h, &mod)) {
      s.libraries.erase(h);
      return r;
    }
  }
  *library = h;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fc {

void module_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.modules.begin(); it != s.modules.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) unload(s, it);
    it = next;
  }
}

}  // namespace fc

FC_API CUresult cuModuleLoad(CUmodule *module, const char *fname) {
  if (module && !readable(fname)) {
    State &s = state();
    std::lock_guard<DriverMutex> lock(s.mu);
    if (CUresult r = require_init(s)) return r;
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  return module_load(module, fname);
}

FC_API CUresult cuModuleLoadData(CUmodule *module, const void *image) { return module_load(module, image); }

FC_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                   void **optionValues) {
  if (numOptions && (!options || !optionValues)) return CUDA_ERROR_INVALID_VALUE;
  return module_load(module, image);
}

FC_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) { return module_load(module, fatCubin); }

FC_API CUresult cuModuleUnload(CUmodule hmod) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.modules.find(hmod);
  if (it == s.modules.end() || it->second.library) return CUDA_ERROR_INVALID_HANDLE;  // a library's: cuLibraryUnload
  unload(s, it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!s.modules.count(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  *hfunc = new_handle_as<CUfunction>(s, 13);  // any name exists: images are not parsed
  return CUDA_SUCCESS;
}

FC_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                  void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                  void **libraryOptionValues, unsigned int numLibraryOptions) {
  if (!code) return CUDA_ERROR_INVALID_VALUE;
  return library_load(library, true);
}

FC_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                      void **jitOptionsValues, unsigned int numJitOptions,
                                      CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions) {
  if (!fileName) return CUDA_ERROR_INVALID_VALUE;
  return library_load(library, readable(fileName));
}

FC_API CUresult cuLibraryUnload(CUlibrary library) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.libraries.find(library);
  if (it == s.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
  for (auto &[ctx, mod] : std::map<CUcontext, CUmodule>(it->second.modules)) {
    auto m = s.modules.find(mod);
    if (m != s.modules.end()) unload(s, m);
  }
  s.libraries.erase(library);
  return CUDA_SUCCESS;
}

FC_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pMod) return CUDA_ERROR_INVALID_VALUE;
  return library_module(s, library, pMod);
}

// A kernel handle is context-independent: getting one loads nothing.
FC_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pKernel || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!s.libraries.count(library)) return CUDA_ERROR_INVALID_HANDLE;
  // The library is encoded in the handle so that cuKernelGetFunction can find it.
  *pKernel = reinterpret_cast<CUkernel>(reinterpret_cast<uintptr_t>(library) | 0x8);
  return CUDA_SUCCESS;
}

FC_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  CUlibrary lib = reinterpret_cast<CUlibrary>(reinterpret_cast<uintptr_t>(kernel) & ~uintptr_t(0x8));
  CUmodule mod;
  if (CUresult r = library_module(s, lib, &mod)) return r;  // lazy loading happens here
  *pFunc = new_handle_as<CUfunction>(s, 13);
  return CUDA_SUCCESS;
}

// The library a kernel handle belongs to (a tracer keys a lazy load's cost by it).
FC_API CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pLib) return CUDA_ERROR_INVALID_VALUE;
  CUlibrary lib = reinterpret_cast<CUlibrary>(reinterpret_cast<uintptr_t>(kernel) & ~uintptr_t(0x8));
  if (!s.libraries.count(lib)) return CUDA_ERROR_INVALID_HANDLE;
  *pLib = lib;
  return CUDA_SUCCESS;
}
