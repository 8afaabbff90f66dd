// Finding the real driver at run time: libvramtrace links no CUDA library. Owns the table of real
// hooked functions (g_real), the real driver functions the recorder calls for itself (DriverApi),
// glibc's dlsym (real_dlsym), and the thread's current context. Resolving takes one mutex
// (g_resolve_mu), once: the first hooked call of the process.
#pragma once

#include <atomic>
#include <cstdint>

#include "cuda_decls.h"
#include "op_table.h"

namespace vt {

// Real addresses of the hooked functions in the loaded libcuda, by HookId.
extern std::atomic<void*> g_real[kHookCount];

// Driver functions used by the recorder, never hooked.
struct DriverApi {
  CUresult (*ctx_get_current)(CUcontext*);
  CUresult (*ctx_get_device)(CUdevice*);
  CUresult (*mem_get_info)(size_t*, size_t*);
  CUresult (*mem_get_address_range)(CUdeviceptr*, size_t*, CUdeviceptr);
  CUresult (*pointer_get_attribute)(void*, CUpointer_attribute, CUdeviceptr);
  CUresult (*mem_get_allocation_properties_from_handle)(CUmemAllocationProp*, CUmemGenericAllocationHandle);
  CUresult (*driver_get_version)(int*);
  CUresult (*device_get_count)(int*);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_get_name)(char*, int, CUdevice);
  CUresult (*device_total_mem)(size_t*, CUdevice);
  CUresult (*device_get_uuid)(CUuuid*, CUdevice);
  CUresult (*primary_ctx_get_state)(CUdevice, unsigned int*, int*);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*primary_ctx_release)(CUdevice);
  // For the free memory around context and code ops (code_costs.h), and pools at a failure.
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext*);
  CUresult (*ctx_from_green_ctx)(CUcontext*, CUgreenCtx);
  CUresult (*kernel_get_library)(CUlibrary*, CUkernel);
  CUresult (*device_get_mem_pool)(CUmemoryPool*, CUdevice);
  CUresult (*device_get_default_mem_pool)(CUmemoryPool*, CUdevice);
  CUresult (*mem_pool_get_attribute)(CUmemoryPool, CUmemPool_attribute, void*);
};
extern DriverApi g_api;

// Resolves g_real and g_api from the libcuda.so.1 already loaded in the process (never loads
// it). One load after the first success (inlined into every hook); retried until libcuda appears.
extern std::atomic<bool> g_driver_resolved;
bool resolve_driver();
// After fork, in the child: the parent's other threads are gone, and a lock one of them held
// (resolving the driver at the fork) would be held forever.
void forget_driver_lock();
inline bool driver_resolved() {
  return __builtin_expect(g_driver_resolved.load(std::memory_order_acquire), 1) || resolve_driver();
}

// Our hook for a real driver function pointer, or `p` itself when it is not hooked (hooks.cpp:
// only libvramtrace.so has the hooks).
void* substitute(void* p);

// The real dlsym (glibc), for our own lookups: calling plain dlsym from here would reach the
// exported stub.
void* real_dlsym(void* handle, const char* name);
// glibc's dlvsym (for lookups in an explicit handle: no caller-relative handles here).
void* real_dlvsym(void* handle, const char* name, const char* version);

// The calling thread's current context and its device ordinal (-1 if none). The driver is asked
// for the context on every call (a context switch may go through paths no hook sees); its
// device only when the context is not the one this thread had last, or when any thread has
// torn a context down since (a new context may come back at a destroyed one's address).
struct ThreadContextCache {
  uint64_t ctx;
  int32_t device;
  uint32_t teardowns;  // g_context_teardowns when cached; valid only while ctx != 0
};
extern __thread ThreadContextCache t_ctx_cache __attribute__((tls_model("initial-exec")));
extern std::atomic<uint32_t> g_context_teardowns;
void context_changed(uint64_t ctx, int32_t* device);  // asks for ctx's device, caches both
inline void contexts_torn_down() { g_context_teardowns.fetch_add(1, std::memory_order_relaxed); }

__attribute__((always_inline)) inline void current_context(uint64_t* ctx, int32_t* device) {
  CUcontext c = nullptr;
  if (__builtin_expect(!g_api.ctx_get_current || g_api.ctx_get_current(&c) != CUDA_SUCCESS || !c, 0)) {
    *ctx = 0;
    *device = -1;
    return;
  }
  *ctx = reinterpret_cast<uint64_t>(c);
  const ThreadContextCache& cache = t_ctx_cache;
  if (__builtin_expect(cache.ctx == *ctx && cache.teardowns == g_context_teardowns.load(std::memory_order_relaxed), 1)) {
    *device = cache.device;
  } else {
    int32_t d;  // a local: `device` may be in the hook's Event, whose address is not to be taken
    context_changed(*ctx, &d);
    *device = d;
  }
}

}  // namespace vt
