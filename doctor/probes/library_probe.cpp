// Loading one library in a child and calling its `int f(int*)` version function (see probes.h).
#include <dlfcn.h>
#include <link.h>

#include "../util.h"
#include "probes.h"

namespace vt::doctor {

namespace {

// Where the loader actually found the library (a bare soname is searched for).
std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) return real_path(lm->l_name);
  return fallback;
}

nlohmann::json open_library(const std::string& lib, void** handle) {
  nlohmann::json j = {{"requested", lib}};
  *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  j["loaded"] = *handle != nullptr;
  if (!*handle) {
    const char* e = dlerror();
    j["error"] = e ? e : "dlopen failed";
  } else {
    j["path"] = loaded_path(*handle, lib);
  }
  return j;
}

}  // namespace

Isolated probe_version_function(const std::string& lib, const std::string& symbol) {
  return run_isolated(
      [&] {
        void* h = nullptr;
        nlohmann::json j = open_library(lib, &h);
        if (!h) return j;
        auto fn = reinterpret_cast<int (*)(int*)>(dlsym(h, symbol.c_str()));
        j["found"] = fn != nullptr;
        if (fn) {
          int v = 0;
          j["result"] = fn(&v);
          j["version"] = v;
        }
        return j;
      },
      20);
}

Isolated probe_dlopen(const std::string& lib) {
  return run_isolated(
      [&] {
        void* h = nullptr;
        return open_library(lib, &h);
      },
      20);
}

}  // namespace vt::doctor
