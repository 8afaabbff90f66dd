// libvramtrace_audit.so, the optional LD_AUDIT module: it hands libraries that bind past the
// preloaded libvramtrace (RTLD_DEEPBIND, and what such a dlopen loads with them) the hooks
// anyway. glibc asks an audit module about every symbol binding to an object it flagged
// LA_FLG_BINDTO, PLT, bind-now (2.35+) and dlsym/dlvsym results alike, and uses the address it
// returns. Bindings to the base namespace's libcuda of a name libvramtrace exports get that
// export; bindings to libc's dlsym, dlvsym, dlopen and dlmopen get libvramtrace's stubs (so the
// library's later lookups and opens are swapped and noted as everyone's are). libvramtrace's own
// bindings, other namespaces (their own libcuda copy: the hooks forward to the base one) and
// every other name keep glibc's answer. Runs inside the loader: no allocation, no lock, no libc
// call but string compares. docs/interception.md, "Libraries out of reach".
#include <link.h>

#include <cstring>

#include "loaded_symbol.h"

namespace {

struct link_map* g_vramtrace = nullptr;  // libvramtrace.so in the base namespace
struct link_map* g_cuda = nullptr;       // libcuda.so.1 there
struct link_map* g_libc = nullptr;       // libc.so.6 there

const char* base_name(const char* path) {
  const char* slash = path ? strrchr(path, '/') : nullptr;
  return slash ? slash + 1 : path ? path : "";
}

bool starts_with(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

bool is_dl_entry(const char* name) {
  return strcmp(name, "dlsym") == 0 || strcmp(name, "dlvsym") == 0 || strcmp(name, "dlopen") == 0 ||
         strcmp(name, "dlmopen") == 0;
}

uintptr_t ours(const char* name, uintptr_t theirs) {
  void* p = g_vramtrace ? vt::symbol_in_object(g_vramtrace->l_addr, g_vramtrace->l_ld, name) : nullptr;
  return p ? reinterpret_cast<uintptr_t>(p) : theirs;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) unsigned int la_version(unsigned int version) {
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

__attribute__((visibility("default"))) unsigned int la_objopen(struct link_map* map, Lmid_t lmid, uintptr_t* cookie) {
  *cookie = reinterpret_cast<uintptr_t>(map);
  if (lmid != LM_ID_BASE) return 0;
  const char* name = base_name(map->l_name);
  if (starts_with(name, "libvramtrace.so") && !g_vramtrace) {
    g_vramtrace = map;
    return 0;  // its own bindings stay glibc's
  }
  // A PLT or bind-now binding is shown to la_symbind64 only when the referencing object has
  // BINDFROM and the defining one BINDTO (a dlsym result: either); glibc's cost is at binding
  // time, once per symbol and object (docs/PERFORMANCE.md, "The LD_AUDIT module").
  unsigned int flags = LA_FLG_BINDFROM;
  if (starts_with(name, "libcuda.so") && !g_cuda) g_cuda = map, flags |= LA_FLG_BINDTO;
  else if (strcmp(name, "libc.so.6") == 0 && !g_libc) g_libc = map, flags |= LA_FLG_BINDTO;
  return flags;
}

__attribute__((visibility("default"))) unsigned int la_objclose(uintptr_t* cookie) {
  auto* map = reinterpret_cast<struct link_map*>(*cookie);
  if (map == g_cuda) g_cuda = nullptr;
  if (map == g_vramtrace) g_vramtrace = nullptr;
  return 0;
}

// Once every object of the start is loaded and relocated: tell libvramtrace, so the report can
// say which libraries out of reach were traced after all.
__attribute__((visibility("default"))) void la_preinit(uintptr_t*) {
  auto attach = reinterpret_cast<void (*)()>(ours("vt_audit_attach", 0));
  if (attach) attach();
}

__attribute__((visibility("default"))) uintptr_t la_symbind64(Elf64_Sym* sym, unsigned int, uintptr_t* refcook,
                                                               uintptr_t* defcook, unsigned int*, const char* name) {
  auto* ref = reinterpret_cast<struct link_map*>(*refcook);
  auto* def = reinterpret_cast<struct link_map*>(*defcook);
  if (!g_vramtrace || ref == g_vramtrace || !name) return sym->st_value;
  if (def == g_cuda && name[0] == 'c' && name[1] == 'u') return ours(name, sym->st_value);
  if (def == g_libc && name[0] == 'd' && name[1] == 'l' && is_dl_entry(name)) return ours(name, sym->st_value);
  return sym->st_value;
}

}  // extern "C"
