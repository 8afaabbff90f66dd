// See hooks.h.
#include "hooks.h"

#include <limits.h>
#include <unistd.h>

#include "util.h"

namespace vt::doctor {

Hooks Hooks::from_env() {
  Hooks h;
  h.root = getenv_str("VRAMTRACE_DOCTOR_ROOT");
  while (h.root.size() > 1 && h.root.back() == '/') h.root.pop_back();
  if (h.root == "/") h.root.clear();
  if (std::string v = getenv_str("VRAMTRACE_DOCTOR_LIBCUDA"); !v.empty()) h.libcuda = v;
  if (std::string v = getenv_str("VRAMTRACE_DOCTOR_LIBNVML"); !v.empty()) h.libnvml = v;
  h.libcupti = getenv_str("VRAMTRACE_DOCTOR_LIBCUPTI");
  h.libvramtrace = getenv_str("VRAMTRACE_LIBRARY");
  if (h.libvramtrace.empty()) h.libvramtrace = default_library_path();
  return h;
}

std::string default_library_path() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  exe[n] = '\0';
  return real_path(dir_of(dir_of(exe)) + "/lib/libvramtrace.so");
}

}  // namespace vt::doctor
