// See loader.h.
#include "loader.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "recorder_port.h"

namespace vt::cupti {

namespace {
// Static: the candidate list is ~40 KiB, and this runs once per process.
char g_loaded[16][kMaxPath];
Candidates g_candidates;
// The simulated driver exports this symbol (tests/fakecuda/api_device.cpp); a real one does not.
bool driver_is_simulated() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return false;
  bool simulated = port::real_dlsym(lib, "fakecuda_process_used_bytes") != nullptr;
  dlclose(lib);
  return simulated;
}
}  // namespace

bool load_cupti(LoadedCupti* out) {
  const char* ptrs[16];
  int n = loaded_cuda_objects(g_loaded, 16);
  for (int i = 0; i < n; ++i) ptrs[i] = g_loaded[i];

  SearchInputs in;
  in.cupti_library = getenv("VRAMTRACE_CUPTI_LIBRARY");
  if (!in.cupti_library && driver_is_simulated()) {
    out->simulated_driver = true;
    return false;
  }
  in.cuda_home = getenv("CUDA_HOME");
  in.cuda_path = getenv("CUDA_PATH");
  in.loaded = ptrs;
  in.n_loaded = n;
  if (int driver = port::driver_version()) in.driver_major = driver / 1000;
  cupti_candidates(in, &g_candidates);
  out->exclusive = g_candidates.exclusive;

  for (int i = 0; i < g_candidates.n; ++i) {
    const char* p = g_candidates.path[i];
    snprintf(out->path, sizeof out->path, "%s", p);
    if (strchr(p, '/') && access(p, F_OK) != 0) continue;  // cheaper than a failing dlopen
    void* h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    link_map* lm = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
      snprintf(out->path, sizeof out->path, "%s", lm->l_name);
    out->handle = h;
    return true;
  }
  return false;
}

}  // namespace vt::cupti
