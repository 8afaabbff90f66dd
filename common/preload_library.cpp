// See preload_library.h.
#include "preload_library.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef VT_INSTALL_BIN_TO_LIB
#define VT_INSTALL_BIN_TO_LIB "../lib"
#endif

namespace vt {

namespace {
std::string dir_of(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}
std::string resolved(const std::string& p) {
  char real[PATH_MAX];
  return realpath(p.c_str(), real) ? std::string(real) : std::string();
}
}  // namespace

std::string preload_library_path() {
  if (const char* env = getenv("VRAMTRACE_LIBRARY"); env && *env) return env;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  exe[n] = '\0';
  std::string bin = dir_of(exe);
  std::string build_tree = dir_of(bin) + "/lib/libvramtrace.so";
  for (const std::string& p : {build_tree, bin + "/" VT_INSTALL_BIN_TO_LIB "/libvramtrace.so"})
    if (std::string r = resolved(p); !r.empty()) return r;
  return build_tree;  // named in the error when it is missing
}

}  // namespace vt
