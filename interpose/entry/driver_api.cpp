// See driver_api.h.
#include "driver_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cerrno>
#include <pthread.h>

#include "loaded_symbol.h"
#include "own_work.h"

namespace vt {

std::atomic<void*> g_real[kHookCount];
DriverApi g_api;

}  // namespace vt

// glibc's dlsym, found once. Also used by the exported dlsym stub (dlsym_stub.S) for RTLD_NEXT
// and RTLD_DEFAULT lookups, which it forwards untouched.
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

// glibc's dlvsym, found once, for the exported dlvsym stub (dlsym_stub.S): in the loaded objects'
// symbol tables (loaded_symbol.h, first_definition: no function call, since a sanitizer runtime
// makes this first call while setting up its interceptors), since every dlvsym call of
// libvramtrace's own (above, and -Bsymbolic binds them to the stub) would come back here.
__attribute__((visibility("hidden"))) void* vt_real_dlvsym_ptr = nullptr;


__attribute__((visibility("hidden"))) void* vt_resolve_real_dlvsym() {
  void* fn = __atomic_load_n(&vt_real_dlvsym_ptr, __ATOMIC_ACQUIRE);
  if (fn) return fn;
  fn = vt::first_definition("dlvsym", _DYNAMIC);
  __atomic_store_n(&vt_real_dlvsym_ptr, fn, __ATOMIC_RELEASE);
  return fn;
}

}  // extern "C"

namespace vt {

void* real_dlvsym(void* handle, const char* name, const char* version) {
  void* fn = __atomic_load_n(&vt_real_dlvsym_ptr, __ATOMIC_ACQUIRE);
  if (!fn) fn = vt_resolve_real_dlvsym();
  if (!fn) return nullptr;
  return reinterpret_cast<void* (*)(void*, const char*, const char*)>(fn)(handle, name, version);
}

namespace {

pthread_mutex_t g_resolve_mu = PTHREAD_MUTEX_INITIALIZER;

// The driver object, found in memory (loaded_symbol.h), or through dlopen when that failed.
struct Driver {
  uintptr_t base = 0;
  const void* dynamic = nullptr;
  void* handle = nullptr;
  bool used_dl = false;  // a dl* call was made: clear what it left for the program's dlerror()
};

void* driver_symbol(Driver& d, const char* name) {
  bool indirect = false;
  if (d.dynamic) {
    void* p = symbol_in_object(d.base, d.dynamic, name, &indirect);
    if (!indirect) return p;
    // An IFUNC (none in the drivers seen so far): dlsym calls its resolver. This one lookup then
    // resets the thread's dlerror() state.
    if (!d.handle) d.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    d.used_dl = true;
  }
  return d.handle ? real_dlsym(d.handle, name) : nullptr;
}

template <typename Fn>
void load(Driver& d, Fn* slot, const char* name) {
  *slot = reinterpret_cast<Fn>(driver_symbol(d, name));
}

}  // namespace

void* real_dlsym(void* handle, const char* name) {
  void* fn = __atomic_load_n(&vt_real_dlsym_ptr, __ATOMIC_ACQUIRE);
  if (!fn) fn = vt_resolve_real_dlsym();
  if (!fn) return nullptr;
  return reinterpret_cast<void* (*)(void*, const char*)>(fn)(handle, name);
}

std::atomic<bool> g_driver_resolved{false};

// The first call: find the driver (once). Off the hook path's fast check, so its scope object
// costs nothing on later calls.
__attribute__((noinline)) bool resolve_driver() {
  // Every signal blocked: a handler's CUDA call on this thread would wait for g_resolve_mu.
  OwnWork own(true);
  pthread_mutex_lock(&g_resolve_mu);
  if (!g_driver_resolved.load(std::memory_order_relaxed)) {
    // Only a driver the program already loaded: a process that never touches CUDA stays so. Its
    // functions are read from its symbol table in memory, as dlopen(RTLD_NOLOAD) + dlsym would
    // find them but without those calls: each resets this thread's dlerror() state, and this is
    // the program's first CUDA call, after which an error of its own may still be pending.
    Driver lib;
    bool in_memory = find_loaded_object("libcuda.so.1", &lib.base, &lib.dynamic);
    if (!in_memory) lib.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), lib.used_dl = true;
    if (in_memory || lib.handle) {
      for (int i = 0; i < kHookCount; ++i)
        g_real[i].store(driver_symbol(lib, kOps[i].name), std::memory_order_relaxed);
      DriverApi& a = g_api;
      load(lib, &a.ctx_get_current, "cuCtxGetCurrent");
      load(lib, &a.ctx_get_device, "cuCtxGetDevice");
      load(lib, &a.mem_get_info, "cuMemGetInfo_v2");
      load(lib, &a.mem_get_address_range, "cuMemGetAddressRange_v2");
      load(lib, &a.pointer_get_attribute, "cuPointerGetAttribute");
      load(lib, &a.mem_get_allocation_properties_from_handle, "cuMemGetAllocationPropertiesFromHandle");
      load(lib, &a.driver_get_version, "cuDriverGetVersion");
      load(lib, &a.device_get_count, "cuDeviceGetCount");
      load(lib, &a.device_get, "cuDeviceGet");
      load(lib, &a.device_get_name, "cuDeviceGetName");
      load(lib, &a.device_total_mem, "cuDeviceTotalMem_v2");
      load(lib, &a.device_get_uuid, "cuDeviceGetUuid_v2");
      if (!a.device_get_uuid) load(lib, &a.device_get_uuid, "cuDeviceGetUuid");
      load(lib, &a.primary_ctx_get_state, "cuDevicePrimaryCtxGetState");
      load(lib, &a.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
      load(lib, &a.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
      load(lib, &a.ctx_push, "cuCtxPushCurrent_v2");
      load(lib, &a.ctx_pop, "cuCtxPopCurrent_v2");
      load(lib, &a.ctx_from_green_ctx, "cuCtxFromGreenCtx");
      load(lib, &a.kernel_get_library, "cuKernelGetLibrary");
      load(lib, &a.device_get_mem_pool, "cuDeviceGetMemPool");
      load(lib, &a.device_get_default_mem_pool, "cuDeviceGetDefaultMemPool");
      load(lib, &a.mem_pool_get_attribute, "cuMemPoolGetAttribute");
      g_driver_resolved.store(true, std::memory_order_release);
    }
    if (lib.used_dl) dlerror();  // our failed lookups must not show up in the program's next dlerror()
  }
  pthread_mutex_unlock(&g_resolve_mu);
  return g_driver_resolved.load(std::memory_order_acquire);
}

void forget_driver_lock() { pthread_mutex_init(&g_resolve_mu, nullptr); }

__thread ThreadContextCache t_ctx_cache __attribute__((tls_model("initial-exec")));
std::atomic<uint32_t> g_context_teardowns{0};

void context_changed(uint64_t ctx, int32_t* device) {
  const uint32_t teardowns = g_context_teardowns.load(std::memory_order_relaxed);  // before the query
  CUdevice d = -1;
  if (!g_api.ctx_get_device || g_api.ctx_get_device(&d) != CUDA_SUCCESS) d = -1;  // (a partial driver may lack it)
  t_ctx_cache = {ctx, int32_t(d), teardowns};
  *device = int32_t(d);
}

}  // namespace vt
