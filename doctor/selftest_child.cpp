// The traced half of the tracing self-test: `<exe> __doctor-selftest LIBCUDA`, started by
// checks/tracing.cpp under LD_PRELOAD=libvramtrace.so. It reaches the driver the way frameworks
// do (dlopen + dlsym, no link-time libcuda), allocates and frees 1 MiB, and prints one JSON
// line with each step's CUresult and whether dlsym handed out vramtrace's hook.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "doctor.h"

namespace vt::doctor {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;

template <typename Fn>
Fn sym(void* h, const char* name) {
  return reinterpret_cast<Fn>(dlsym(h, name));
}

// True when the pointer lives in a library whose file name mentions vramtrace: the preloaded
// dlsym substituted its hook, as it must for tracing to see the call.
bool from_vramtrace(void* p) {
  Dl_info info;
  return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "vramtrace");
}

}  // namespace

int selftest_child_main(int argc, char** argv) {
  nlohmann::json j;
  auto finish = [&](int code) {
    printf("%s\n", j.dump().c_str());
    fflush(stdout);
    return code;
  };
  if (argc < 3) {
    j["error"] = "usage: __doctor-selftest LIBCUDA";
    return finish(2);
  }
  void* h = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    j["error"] = std::string("dlopen: ") + (e ? e : "failed");
    return finish(3);
  }
  auto init = sym<CUresult (*)(unsigned)>(h, "cuInit");
  auto get = sym<CUresult (*)(CUdevice*, int)>(h, "cuDeviceGet");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(h, "cuDevicePrimaryCtxRetain");
  auto set_current = sym<CUresult (*)(CUcontext)>(h, "cuCtxSetCurrent");
  auto alloc = sym<CUresult (*)(CUdeviceptr*, size_t)>(h, "cuMemAlloc_v2");
  auto free_fn = sym<CUresult (*)(CUdeviceptr)>(h, "cuMemFree_v2");
  auto release = sym<CUresult (*)(CUdevice)>(h, "cuDevicePrimaryCtxRelease_v2");
  if (!init || !get || !retain || !set_current || !alloc || !free_fn || !release) {
    j["error"] = "the driver lacks a function the self-test needs";
    return finish(4);
  }
  j["hooked"] = from_vramtrace(reinterpret_cast<void*>(alloc));
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr ptr = 0;
  j["init"] = init(0);
  if (j["init"] != 0) return finish(5);
  j["device"] = get(&dev, 0);
  if (j["device"] != 0) return finish(5);
  j["retain"] = retain(&ctx, dev);
  if (j["retain"] != 0) return finish(5);
  set_current(ctx);
  j["alloc"] = alloc(&ptr, 1 << 20);
  if (j["alloc"] == 0) j["free"] = free_fn(ptr);
  set_current(nullptr);
  release(dev);
  return finish(0);
}

}  // namespace vt::doctor
