// See other_tools.h.
#include "other_tools.h"

#include <cstdio>
#include <cstring>

namespace vt::cupti {

namespace {
bool has_prefix(const char* s, const char* p) { return strncmp(s, p, strlen(p)) == 0; }

bool ours(const char* path) {
  const char* b = strrchr(path, '/');
  b = b ? b + 1 : path;
  return has_prefix(b, "libvramtrace") || has_prefix(b, "libcupti");
}
}  // namespace

bool other_tool_in_env(const char* const* envp, char* out, size_t cap) {
  if (!envp) return false;
  for (const char* const* e = envp; *e; ++e) {
    const char* kv = *e;
    const char* eq = strchr(kv, '=');
    if (!eq || eq[1] == '\0') continue;  // set but empty counts as unset
    size_t n = size_t(eq - kv);
    bool hit = false;
    if ((n == 21 && has_prefix(kv, "CUDA_INJECTION64_PATH")) || (n == 21 && has_prefix(kv, "CUDA_INJECTION32_PATH")))
      hit = true;
    else if (n > 5 && has_prefix(kv, "NSYS_"))
      hit = true;
    else if (n == 21 && has_prefix(kv, "NVTX_INJECTION64_PATH") && !ours(eq + 1))
      hit = true;
    if (hit) {
      snprintf(out, cap, "%.*s", int(n), kv);
      return true;
    }
  }
  return false;
}

}  // namespace vt::cupti
