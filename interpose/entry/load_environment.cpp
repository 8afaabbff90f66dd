// See load_environment.h. Copied once, by a constructor, into static storage (no heap).
#include "load_steps.h"
#include "load_environment.h"

#include <unistd.h>

#include <cstring>

#include "env_config.h"

extern char** environ;

namespace vt {

namespace {

constexpr size_t kArena = 16384;  // the VRAMTRACE_ variables: names, '=', values
constexpr int kMaxVars = 64;
char g_arena[kArena];
const char* g_vars[kMaxVars];  // "NAME=value" in g_arena
int g_count = 0;
char g_cwd[4096];
bool g_cwd_known = false;

void remember_environment() {
  size_t used = 0;
  for (char** e = environ; e && *e && g_count < kMaxVars; ++e) {
    if (strncmp(*e, "VRAMTRACE_", 10) != 0) continue;
    size_t n = strlen(*e) + 1;
    if (used + n > kArena) break;
    memcpy(g_arena + used, *e, n);
    g_vars[g_count++] = g_arena + used;
    used += n;
  }
  g_cwd_known = getcwd(g_cwd, sizeof g_cwd) != nullptr;
  set_config_fallback(loaded_env);
  if (g_cwd_known) set_config_base_dir(g_cwd);
}

}  // namespace

const char* loaded_env(const char* name) {
  size_t n = strlen(name);
  for (int i = 0; i < g_count; ++i)
    if (strncmp(g_vars[i], name, n) == 0 && g_vars[i][n] == '=') return g_vars[i] + n + 1;
  return nullptr;
}

}  // namespace vt

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void remember_environment() { vt::remember_environment(); }
}  // namespace vt::load_steps
