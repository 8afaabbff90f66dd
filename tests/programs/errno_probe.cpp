// errno across every driver call of the reference workload, reached one of the ways programs
// reach the driver:
//   default       dlopen(libcuda.so.1, RTLD_GLOBAL) + dlsym(RTLD_DEFAULT, exact name): the
//                 binding a -lcuda program gets (a preloaded definition comes first)
//   dlsym         dlsym(handle, exact name)
//   procaddr      cuGetProcAddress_v2, its self-lookup, then every name through it
//   procaddr-ptsz the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
// Before each call (lookups and vramtrace's region API included) errno is set to a fresh
// sentinel; after it, a changed errno is printed. Around each driver call dlerror()'s pending
// message is checked the same way: every other call has one of the program's own pending (a
// failed dlopen just before), which must come out after it, and the others none, which must stay
// none (the first calls open the trace, load libraries, look functions up: dlerror is per thread
// and ours must not leak into the program's). The output is compared with an untraced run.
#include <dlfcn.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "api_names.h"

namespace {

typedef CUresult (*GetProcV2)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

int g_calls = 0, g_changed = 0, g_dl_calls = 0, g_dl_changed = 0;
char g_pending[64];  // the program's own dlerror() message expected after the call ("": none)

// Before a driver call: a pending dlerror() message of the program's own, or none.
void arm_dlerror() {
  dlerror();
  g_pending[0] = 0;
  if (g_dl_calls % 2 == 0) {
    snprintf(g_pending, sizeof g_pending, "/nonexistent/vt-dlerror-probe-%d.so", g_dl_calls);
    if (dlopen(g_pending, RTLD_NOW)) g_pending[0] = 0;
  }
}

void check_dlerror(const char* what) {
  const char* e = dlerror();
  ++g_dl_calls;
  bool same = g_pending[0] ? e && strstr(e, g_pending) : !e;
  if (!same) {
    printf("%s changed dlerror() from \"%s\" to \"%s\"\n", what, g_pending, e ? e : "(none)");
    ++g_dl_changed;
  }
}

int sentinel() { return 4000 + g_calls; }

void check(const char* what, int expected) {
  int now = errno;
  ++g_calls;
  if (now != expected) {
    printf("%s changed errno from %d to %d\n", what, expected, now);
    ++g_changed;
  }
}

// Every Api field calls through a wrapper that sets and checks errno around the real pointer.
#define VT_WRAP(field)                                   \
  do {                                                   \
    static decltype(Api::field) real;                    \
    real = a.field;                                      \
    a.field = [](auto... args) {                         \
      arm_dlerror();                                     \
      int s = sentinel();                                \
      errno = s;                                         \
      auto r = real(args...);                            \
      check(#field, s);                                  \
      check_dlerror(#field);                             \
      return r;                                          \
    };                                                   \
  } while (0)

void wrap(Api& a) {
  VT_WRAP(init); VT_WRAP(device_get); VT_WRAP(primary_retain); VT_WRAP(ctx_set_current);
  VT_WRAP(ctx_create); VT_WRAP(stream_create); VT_WRAP(granularity); VT_WRAP(ipc_get);
  VT_WRAP(mem_alloc); VT_WRAP(mem_alloc_pitch); VT_WRAP(mem_free); VT_WRAP(mem_alloc_managed);
  VT_WRAP(mem_host_alloc); VT_WRAP(mem_alloc_host); VT_WRAP(mem_free_host); VT_WRAP(host_register);
  VT_WRAP(host_unregister); VT_WRAP(alloc_async); VT_WRAP(free_async); VT_WRAP(alloc_from_pool_async);
  VT_WRAP(pool_create); VT_WRAP(pool_destroy); VT_WRAP(pool_trim); VT_WRAP(mem_create);
  VT_WRAP(mem_release); VT_WRAP(mem_map); VT_WRAP(mem_unmap); VT_WRAP(address_reserve);
  VT_WRAP(address_free); VT_WRAP(array_create); VT_WRAP(array3d_create); VT_WRAP(array_destroy);
  VT_WRAP(ipc_open); VT_WRAP(ipc_close); VT_WRAP(ctx_destroy); VT_WRAP(primary_reset);
}

void* checked_dlsym(void* handle, const char* name) {
  int s = sentinel();
  errno = s;
  void* p = dlsym(handle, name);
  check((std::string("dlsym ") + name).c_str(), s);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string mode = argc > 1 ? argv[1] : "default";
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | (mode == "default" ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!lib) {
    fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  Api a{};
  if (mode == "default" || mode == "dlsym") {
    void* where = mode == "default" ? RTLD_DEFAULT : lib;
    for (const ApiName& n : kApiNames) api_slot(a, n) = checked_dlsym(where, n.exact);
  } else if (mode == "procaddr" || mode == "procaddr-ptsz") {
    auto first = reinterpret_cast<GetProcV2>(checked_dlsym(lib, "cuGetProcAddress_v2"));
    if (!first) return 2;
    CUdriverProcAddressQueryResult st;
    void* self = nullptr;
    int s = sentinel();
    errno = s;
    CUresult r = first("cuGetProcAddress", &self, 12000, 0, &st);
    check("cuGetProcAddress_v2 (self-lookup)", s);
    if (r != CUDA_SUCCESS) return 4;
    auto get = reinterpret_cast<GetProcV2>(self);
    cuuint64_t flags = mode == "procaddr-ptsz" ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
    for (const ApiName& n : kApiNames) {
      s = sentinel();
      errno = s;
      get(n.base, &api_slot(a, n), 13000, flags, &st);
      check((std::string("cuGetProcAddress ") + n.base).c_str(), s);
    }
  } else {
    fprintf(stderr, "usage: errno_probe default|dlsym|procaddr|procaddr-ptsz\n");
    return 2;
  }
  for (const ApiName& n : kApiNames)
    if (!api_slot(a, n)) {
      fprintf(stderr, "missing: %s\n", n.exact);
      return 2;
    }
  // The region API, before and after the trace opens (its first call has no trace yet).
  // (Looked up unchecked: a failing dlsym, untraced, may change errno.)
  auto region = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "vramtrace_region_begin"));
  auto region_end = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "vramtrace_region_end"));
  if (region) {
    int s = sentinel();
    errno = s;
    region("before");
    check("vramtrace_region_begin", s);
  }
  wrap(a);
  int rc = run_workload(a);
  if (region_end) {
    int s = sentinel();
    errno = s;
    region_end("before");
    check("vramtrace_region_end", s);
  }
  printf("%s: errno checked across %s calls, %d changed\n", mode.c_str(), g_calls > 60 ? "all" : "too few",
         g_changed);
  printf("%s: dlerror checked across %s driver calls, %d changed\n", mode.c_str(), g_dl_calls > 40 ? "all" : "too few",
         g_dl_changed);
  return rc;
}
