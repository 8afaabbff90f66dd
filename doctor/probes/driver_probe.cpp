// Asking libcuda, in a child, what it is and what it sees (see probes.h). Function pointers are
// looked up by their exported names (the _v2 spellings cuda.h maps to) so no CUDA library is
// ever linked.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include "../util.h"
#include "probes.h"

namespace vt::doctor {

namespace {

template <typename Fn>
Fn sym(void* h, const char* name) {
  return reinterpret_cast<Fn>(dlsym(h, name));
}

nlohmann::json driver_answers(const std::string& lib, bool with_memory) {
  nlohmann::json j = {{"requested", lib}};
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  j["loaded"] = h != nullptr;
  if (!h) {
    const char* e = dlerror();
    j["error"] = e ? e : "dlopen failed";
    return j;
  }
  link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) {
    j["loaded_as"] = lm->l_name;
    j["path"] = real_path(lm->l_name);
  }

  auto get_version = sym<CUresult (*)(int*)>(h, "cuDriverGetVersion");
  auto init = sym<CUresult (*)(unsigned)>(h, "cuInit");
  auto error_name = sym<CUresult (*)(CUresult, const char**)>(h, "cuGetErrorName");
  auto error_string = sym<CUresult (*)(CUresult, const char**)>(h, "cuGetErrorString");
  if (get_version) {
    int v = 0;
    j["version_result"] = int(get_version(&v));
    j["version"] = v;
  }
  if (!init) {
    j["error"] = "no cuInit in this library";
    return j;
  }
  CUresult r = init(0);
  j["init_result"] = int(r);
  const char* s = nullptr;
  if (error_name && error_name(r, &s) == CUDA_SUCCESS && s) j["init_name"] = s;
  s = nullptr;
  if (error_string && error_string(r, &s) == CUDA_SUCCESS && s) j["init_string"] = s;
  if (r != CUDA_SUCCESS) return j;

  auto count_fn = sym<CUresult (*)(int*)>(h, "cuDeviceGetCount");
  auto get = sym<CUresult (*)(CUdevice*, int)>(h, "cuDeviceGet");
  auto name_fn = sym<CUresult (*)(char*, int, CUdevice)>(h, "cuDeviceGetName");
  auto total_fn = sym<CUresult (*)(size_t*, CUdevice)>(h, "cuDeviceTotalMem_v2");
  auto attr = sym<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(h, "cuDeviceGetAttribute");
  auto retain = sym<CUresult (*)(CUcontext*, CUdevice)>(h, "cuDevicePrimaryCtxRetain");
  auto release = sym<CUresult (*)(CUdevice)>(h, "cuDevicePrimaryCtxRelease_v2");
  auto set_current = sym<CUresult (*)(CUcontext)>(h, "cuCtxSetCurrent");
  auto mem_info = sym<CUresult (*)(size_t*, size_t*)>(h, "cuMemGetInfo_v2");
  int count = 0;
  if (!count_fn || !get || count_fn(&count) != CUDA_SUCCESS) return j;
  j["devices"] = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    CUdevice dev;
    if (get(&dev, i) != CUDA_SUCCESS) continue;
    nlohmann::json d = {{"index", i}};
    char name[256] = {};
    if (name_fn && name_fn(name, sizeof name, dev) == CUDA_SUCCESS) d["name"] = name;
    size_t total = 0;
    if (total_fn && total_fn(&total, dev) == CUDA_SUCCESS) d["total_bytes"] = total;
    int major = 0, minor = 0;
    if (attr && attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
        attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS) {
      d["cc_major"] = major;
      d["cc_minor"] = minor;
    }
    // Free memory needs a context. The primary one is what frameworks use; releasing it right
    // away leaves the device as we found it (the child exits anyway).
    if (with_memory && retain && release && set_current && mem_info) {
      CUcontext ctx = nullptr;
      CUresult rr = retain(&ctx, dev);
      if (rr == CUDA_SUCCESS) {
        set_current(ctx);
        size_t free_b = 0, total_b = 0;
        CUresult mr = mem_info(&free_b, &total_b);
        d["mem_result"] = int(mr);
        if (mr == CUDA_SUCCESS) d["free_bytes"] = free_b;
        set_current(nullptr);
        release(dev);
      } else {
        d["mem_result"] = int(rr);
      }
    }
    j["devices"].push_back(d);
  }
  return j;
}

}  // namespace

Isolated probe_driver(const std::string& lib, bool with_memory) {
  // cuInit on a machine with many GPUs and persistence mode off takes seconds per GPU.
  return run_isolated([&] { return driver_answers(lib, with_memory); }, 120);
}

}  // namespace vt::doctor
