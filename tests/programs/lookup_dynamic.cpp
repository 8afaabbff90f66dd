// Reaches the driver without linking it, the ways real programs do:
//   dlsym         dlopen("libcuda.so.1") + dlsym(handle, exact name)   (XLA, PyTorch's c10)
//   dlvsym        the same with dlvsym(handle, exact name, "VRAMTRACE_ANY"): only a libcuda without
//                 a version table answers (missing: exit 2)
//   procaddr      dlsym(handle, "cuGetProcAddress_v2"), then cudart's sequence: "" first, the
//                 self-lookup of "cuGetProcAddress" at 12000, every later lookup through it
//   procaddr-ptsz the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (flags 2)
//   procaddr-v1   the self-lookup at 11030, which yields the 4-argument v1 cuGetProcAddress
// With --expect-hooked, every pointer obtained for a hooked function must come from
// libvramtrace.so (exit 3 otherwise): this is what cudart would be handed. --lookups-only (after
// it) stops there with exit 0, before the workload (a real driver refuses parts of it: opening
// the process's own IPC handle).
#include <dlfcn.h>

#include <string>

#include "api_names.h"

typedef CUresult (*GetProcV2)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*GetProcV1)(const char*, void**, int, cuuint64_t);

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lookup_dynamic dlsym|dlvsym|procaddr|procaddr-ptsz|procaddr-v1 [--expect-hooked [--lookups-only]]\n");
    return 2;
  }
  std::string mode = argv[1];
  bool expect_hooked = argc > 2 && std::string(argv[2]) == "--expect-hooked";
  bool lookups_only = argc > 3 && std::string(argv[3]) == "--lookups-only";
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  Api a{};
  if (mode == "dlsym") {
    for (const ApiName& n : kApiNames) api_slot(a, n) = dlsym(lib, n.exact);
  } else if (mode == "dlvsym") {
    for (const ApiName& n : kApiNames) api_slot(a, n) = dlvsym(lib, n.exact, "VRAMTRACE_ANY");
  } else {
    auto first = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
    if (!first) return 2;
    void* p = nullptr;
    CUdriverProcAddressQueryResult st;
    first("", &p, 0, 0, &st);  // cudart's probe; fails
    cuuint64_t flags = mode == "procaddr-ptsz" ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
    if (mode == "procaddr-v1") {
      void* self = nullptr;
      if (first("cuGetProcAddress", &self, 11030, 0, &st) != CUDA_SUCCESS) return 4;
      if (expect_hooked) {
        Dl_info info;
        if (!dladdr(self, &info) || !strstr(info.dli_fname, "libvramtrace")) {
          fprintf(stderr, "unhooked: cuGetProcAddress (v1 self-lookup)\n");
          return 3;
        }
      }
      auto get = reinterpret_cast<GetProcV1>(self);
      for (const ApiName& n : kApiNames)
        if (get(n.base, &api_slot(a, n), 13000, flags) != CUDA_SUCCESS) fprintf(stderr, "lookup failed: %s\n", n.base);
    } else {
      void* self = nullptr;
      if (first("cuGetProcAddress", &self, 12000, 0, &st) != CUDA_SUCCESS) return 4;
      if (expect_hooked) {
        Dl_info info;
        if (!dladdr(self, &info) || !strstr(info.dli_fname, "libvramtrace")) {
          fprintf(stderr, "unhooked: cuGetProcAddress (self-lookup)\n");
          return 3;
        }
      }
      auto get = reinterpret_cast<GetProcV2>(self);
      for (const ApiName& n : kApiNames)
        if (get(n.base, &api_slot(a, n), 13000, flags, &st) != CUDA_SUCCESS) fprintf(stderr, "lookup failed: %s\n", n.base);
    }
  }
  int unhooked = 0;
  for (const ApiName& n : kApiNames) {
    void* p = api_slot(a, n);
    if (!p) {
      fprintf(stderr, "missing: %s\n", n.exact);
      return 2;
    }
    Dl_info info;
    bool ours = dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libvramtrace");
    if (expect_hooked && n.hooked && !ours) {
      fprintf(stderr, "unhooked: %s\n", n.exact);
      ++unhooked;
    }
    if (ours && !n.hooked) {
      fprintf(stderr, "wrongly hooked: %s\n", n.exact);
      ++unhooked;
    }
  }
  if (unhooked) return 3;
  if (lookups_only) return 0;
  return run_workload(a);
}
