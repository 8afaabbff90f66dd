// See loaded_symbol.h.
#include "loaded_symbol.h"

#include <elf.h>
#include <link.h>

#include <cstdint>

namespace vt {

namespace {

struct DynTables {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
  const ElfW(Half)* versym = nullptr;  // per symbol: its version index (0x8000: hidden), or none
  size_t soname = SIZE_MAX;            // DT_SONAME's offset in strtab
};

// glibc relocates these dynamic entries in place (absolute addresses); some loaders leave them
// as offsets from the load base. An offset is always below the base of a loaded object.
uintptr_t absolute(ElfW(Addr) base, ElfW(Addr) v) { return v < base ? base + v : v; }

bool tables_of(ElfW(Addr) base, const ElfW(Dyn)* dyn, DynTables* t) {
  if (!dyn) return false;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: t->symtab = reinterpret_cast<const ElfW(Sym)*>(absolute(base, dyn->d_un.d_ptr)); break;
      case DT_STRTAB: t->strtab = reinterpret_cast<const char*>(absolute(base, dyn->d_un.d_ptr)); break;
      case DT_STRSZ: t->strsz = dyn->d_un.d_val; break;
      case DT_GNU_HASH: t->gnu_hash = reinterpret_cast<const uint32_t*>(absolute(base, dyn->d_un.d_ptr)); break;
      case DT_HASH: t->sysv_hash = reinterpret_cast<const uint32_t*>(absolute(base, dyn->d_un.d_ptr)); break;
      case DT_VERSYM: t->versym = reinterpret_cast<const ElfW(Half)*>(absolute(base, dyn->d_un.d_ptr)); break;
      case DT_SONAME: t->soname = dyn->d_un.d_val; break;
      default: break;
    }
  }
  return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash);
}

bool tables_of(const dl_phdr_info* info, DynTables* t) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  return tables_of(info->dlpi_addr, dyn, t);
}

// No libc string function: this runs in the dlvsym stub's first call, which a sanitizer runtime
// makes while it sets up its interceptors (ASan's strcmp is not usable yet then: a call through a
// null pointer, found by the sanitizer CI on a traced ASan program).
bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

bool defines(const DynTables& t, uint32_t index, const char* name) {
  const ElfW(Sym)& s = t.symtab[index];
  if (s.st_name >= t.strsz || s.st_shndx == SHN_UNDEF || s.st_value == 0) return false;
  unsigned type = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
  if ((type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC) || bind == STB_LOCAL) return false;
  if (ELF64_ST_VISIBILITY(s.st_other) != STV_DEFAULT && ELF64_ST_VISIBILITY(s.st_other) != STV_PROTECTED) return false;
  // A hidden version (name@VER, kept for old binaries) is never what an unversioned lookup gets:
  // dlsym returns the default one (name@@VER).
  if (t.versym && (t.versym[index] & 0x8000)) return false;
  return same(t.strtab + s.st_name, name);
}

// The index of `name` in the dynamic symbol table, or 0.
uint32_t lookup_gnu(const DynTables& t, const char* name) {
  uint32_t h = 5381;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) h = h * 33 + *p;
  const uint32_t nbuckets = t.gnu_hash[0], symoffset = t.gnu_hash[1], bloom_size = t.gnu_hash[2],
                 bloom_shift = t.gnu_hash[3];
  if (!nbuckets || !bloom_size) return 0;
  const ElfW(Addr)* bloom = reinterpret_cast<const ElfW(Addr)*>(t.gnu_hash + 4);
  const uint32_t* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  constexpr unsigned kBits = sizeof(ElfW(Addr)) * 8;
  ElfW(Addr) word = bloom[(h / kBits) % bloom_size];
  ElfW(Addr) mask = (ElfW(Addr)(1) << (h % kBits)) | (ElfW(Addr)(1) << ((h >> bloom_shift) % kBits));
  if ((word & mask) != mask) return 0;
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return 0;
  for (;; ++i) {
    uint32_t h2 = chain[i - symoffset];
    if ((h | 1) == (h2 | 1) && defines(t, i, name)) return i;
    if (h2 & 1) return 0;
  }
}

uint32_t lookup_sysv(const DynTables& t, const char* name) {
  uint32_t h = 0;
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(name); *p; ++p) {
    h = (h << 4) + *p;
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  const uint32_t nbucket = t.sysv_hash[0], nchain = t.sysv_hash[1];
  if (!nbucket) return 0;
  const uint32_t* bucket = t.sysv_hash + 2;
  const uint32_t* chain = bucket + nbucket;
  for (uint32_t i = bucket[h % nbucket], n = 0; i && i < nchain && n < nchain; i = chain[i], ++n)
    if (defines(t, i, name)) return i;
  return 0;
}

// An IFUNC's value is its resolver, not the function: nullptr, and *indirect set.
void* lookup(const DynTables& t, ElfW(Addr) base, const char* name, bool* indirect = nullptr) {
  uint32_t i = t.gnu_hash ? lookup_gnu(t, name) : lookup_sysv(t, name);
  if (i && ELF64_ST_TYPE(t.symtab[i].st_info) == STT_GNU_IFUNC) {
    if (indirect) *indirect = true;
    return nullptr;
  }
  return i ? reinterpret_cast<void*>(base + t.symtab[i].st_value) : nullptr;
}

bool contains(const dl_phdr_info* info, const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && a >= lo && a < lo + ph.p_memsz) return true;
  }
  return false;
}

const char* last_component(const char* path) {
  const char* last = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') last = p + 1;
  return last;
}

struct Search {
  const char* name;
  const void* skip;
  void* found = nullptr;
  const char* path = "";
};

// Another copy of libvramtrace.so (an installed wheel's beside a build tree's): its exports are
// ours again, never the functions we look for (each copy finding the other's looped for ever).
bool is_vramtrace_copy(const DynTables& t, uintptr_t base) { return lookup(t, base, "vramtrace_api_version") != nullptr; }

int visit(dl_phdr_info* info, size_t, void* arg) {
  auto* s = static_cast<Search*>(arg);
  if (contains(info, s->skip)) return 0;
  DynTables t;
  if (!tables_of(info, &t) || is_vramtrace_copy(t, info->dlpi_addr)) return 0;
  void* p = lookup(t, info->dlpi_addr, s->name);
  if (!p) return 0;
  s->found = p;
  s->path = info->dlpi_name ? info->dlpi_name : "";
  return 1;  // the first in load order wins, as in a global lookup
}

}  // namespace

namespace {
// The definition of `name` in the object of `m`, unless that object is a copy of libvramtrace.so.
void* defined_outside_copies(const link_map* m, const char* name) {
  DynTables t;
  if (!tables_of(m->l_addr, m->l_ld, &t) || is_vramtrace_copy(t, m->l_addr)) return nullptr;
  return lookup(t, m->l_addr, name);
}
}  // namespace

void* first_definition(const char* name, const void* skip_dynamic) {
  for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
    if (m->l_ld == skip_dynamic) continue;
    if (void* p = defined_outside_copies(m, name)) return p;
  }
  return nullptr;
}

const char* other_vramtrace(const void* self_dynamic, bool before) {
  bool past_self = false;
  for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
    if (m->l_ld == self_dynamic) {
      if (before) return nullptr;
      past_self = true;
      continue;
    }
    DynTables t;
    if ((before || past_self) && tables_of(m->l_addr, m->l_ld, &t) && is_vramtrace_copy(t, m->l_addr))
      return m->l_name ? m->l_name : "";
  }
  return nullptr;
}

void* definition_after(const char* name, const void* self_dynamic) {
  bool after = false;
  for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
    if (m->l_ld == self_dynamic) {
      after = true;
      continue;
    }
    if (after)
      if (void* p = defined_outside_copies(m, name)) return p;
  }
  return first_definition(name, self_dynamic);
}

void* symbol_in_object(uintptr_t base, const void* dynamic, const char* name, bool* indirect) {
  if (indirect) *indirect = false;
  DynTables t;
  if (!tables_of(ElfW(Addr)(base), static_cast<const ElfW(Dyn)*>(dynamic), &t)) return nullptr;
  return lookup(t, ElfW(Addr)(base), name, indirect);
}

bool find_loaded_object(const char* soname, uintptr_t* base, const void** dynamic) {
  for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
    DynTables t;
    if (!tables_of(m->l_addr, m->l_ld, &t)) continue;
    if ((t.soname < t.strsz && same(t.strtab + t.soname, soname)) || (m->l_name && same(last_component(m->l_name), soname))) {
      *base = m->l_addr;
      *dynamic = m->l_ld;
      return true;
    }
  }
  return false;
}

namespace {
bool g_list_locked = false;
}  // namespace

bool loader_list_usable() { return !g_list_locked; }
void mark_loader_list_locked() { g_list_locked = true; }

void* find_loaded_symbol(const char* name, const void* skip, const char** path) {
  if (!loader_list_usable()) {  // the list without its lock (dladdr1 takes only the loader's main one)
    Dl_info info;
    link_map* own = nullptr;
    if (!dladdr1(skip, &info, reinterpret_cast<void**>(&own), RTLD_DL_LINKMAP)) own = nullptr;
    for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
      if (m == own) continue;
      if (void* p = defined_outside_copies(m, name)) {
        if (path) *path = m->l_name ? m->l_name : "";
        return p;
      }
    }
    if (path) *path = "";
    return nullptr;
  }
  Search s{name, skip};
  dl_iterate_phdr(visit, &s);
  if (path) *path = s.path;
  return s.found;
}

}  // namespace vt
