// See overrides.h.
#include "overrides.h"

#include "preload_library.h"
#include "util.h"

namespace vt::doctor {

Overrides Overrides::from_env() {
  Overrides h;
  h.root = getenv_str("VRAMTRACE_DOCTOR_ROOT");
  while (h.root.size() > 1 && h.root.back() == '/') h.root.pop_back();
  if (h.root == "/") h.root.clear();
  if (std::string v = getenv_str("VRAMTRACE_DOCTOR_LIBCUDA"); !v.empty()) h.libcuda = v;
  if (std::string v = getenv_str("VRAMTRACE_DOCTOR_LIBNVML"); !v.empty()) h.libnvml = v;
  h.libcupti = getenv_str("VRAMTRACE_DOCTOR_LIBCUPTI");
  h.libvramtrace = preload_library_path();  // VRAMTRACE_LIBRARY, else beside the binary
  return h;
}

}  // namespace vt::doctor
