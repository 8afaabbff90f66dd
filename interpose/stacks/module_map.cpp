// See module_map.h. The table is append-only and guarded by one mutex: it is touched only when a
// stack is seen for the first time.
#include "module_map.h"

#include <elf.h>
#include <link.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "loaded_symbol.h"
#include "own_work.h"
#include "recorder_internal.h"
#include "meta_records.h"

namespace vt {

namespace {

constexpr int kMaxModules = 8192;
struct Range {
  uint64_t lo, hi;
};
Range g_ranges[kMaxModules];
int g_count = 0;
unsigned long long g_scanned_adds = ~0ull;  // dlpi_adds at the last scan: libraries loaded so far
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

bool covered(uint64_t ip) {
  for (int i = 0; i < g_count; ++i)
    if (ip >= g_ranges[i].lo && ip < g_ranges[i].hi) return true;
  return false;
}

struct ScanState {
  uint64_t t;
};

// The GNU build-id note of a loaded object, from its PT_NOTE segments in memory.
size_t build_id(dl_phdr_info* info, const uint8_t** out) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        *out = desc;
        return nh->n_descsz;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return 0;
}

int record_module(dl_phdr_info* info, size_t, void* data) {
  auto* st = static_cast<ScanState*>(data);
  uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
  }
  if (hi == 0 || g_count >= kMaxModules) return 0;
  for (int i = 0; i < g_count; ++i)
    if (g_ranges[i].lo == lo && g_ranges[i].hi == hi) return 0;
  g_ranges[g_count++] = {lo, hi};

  static char resolved[4096];  // (under g_mu: off the stack of the thread that needs the scan)
  const char* path = info->dlpi_name;
  if (!path || !*path) {  // the main program
    main_program_path(resolved, sizeof resolved);
    path = resolved;
  } else if (path[0] != '/' && realpath(path, resolved)) {
    path = resolved;  // dlopen'ed by a relative path: the analyzer may run elsewhere
  }
  const uint8_t* id = nullptr;
  size_t id_len = build_id(info, &id);
  format::ModuleRecord r{info->dlpi_addr, lo, hi, format::Text(path, strnlen(path, 4000)),
                         format::Text(reinterpret_cast<const char*>(id), id_len > 64 ? 64 : id_len)};
  static uint8_t buf[4096 + 128];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::ModuleSchema>(p, r);
  write_meta(format::kTagModule, p.data(), p.size(), st->t);
  return 0;
}

// The path of the file mapped at `addr`, from /proc/self/maps, into `out` ("" if none). Reads
// the file in pieces through a fixed buffer: a process may map thousands of objects.
void mapped_file_at(uint64_t addr, char* out, size_t cap) {
  out[0] = '\0';
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4608];  // a line is at most ~4.2 KB (PATH_MAX and the fields before it)
  size_t have = 0;
  bool eof = false;
  for (;;) {
    if (!eof && have < sizeof buf - 1) {
      ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
      if (r > 0) have += size_t(r);
      else eof = true;
    }
    char* nl = static_cast<char*>(memchr(buf, '\n', have));
    if (!nl) {
      if (!eof && have < sizeof buf - 1) continue;
      if (have == 0) break;
      nl = buf + have;  // the last line without its newline
    }
    *nl = '\0';
    // "lo-hi perms offset dev inode   path"
    char* end = nullptr;
    uint64_t lo = strtoull(buf, &end, 16), hi = *end == '-' ? strtoull(end + 1, nullptr, 16) : 0;
    if (addr >= lo && addr < hi) {
      if (const char* path = strchr(buf, '/')) snprintf(out, cap, "%s", path);
      break;
    }
    size_t used = size_t(nl - buf) + (nl < buf + have ? 1 : 0);
    memmove(buf, buf + used, have - used);
    have -= used;
    if (eof && have == 0) break;
  }
  close(fd);
}

struct MainMap {
  uint64_t lo = 0;
  bool found = false;
};

}  // namespace

void main_program_path(char* out, size_t cap) {
  MainMap m;
  if (loader_list_usable())
    dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* mm = static_cast<MainMap*>(data);
        mm->lo = ~0ull;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_addr + info->dlpi_phdr[i].p_vaddr < mm->lo)
            mm->lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
        mm->found = true;
        return 1;  // the first object is the main program
      },
      &m);
  // Started through ld.so, the kernel ran ld.so itself, which has no interpreter: AT_BASE is 0
  // (ld.so rewrites AT_PHDR, AT_ENTRY and AT_EXECFN for the program, not AT_BASE).
  if (m.found && m.lo != ~0ull && getauxval(AT_BASE) == 0) {
    mapped_file_at(m.lo, out, cap);
    if (out[0]) return;
  }
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  out[n > 0 ? n : 0] = '\0';
}

void ensure_modules(const uint64_t* ips, int n, uint64_t t) {
  pthread_mutex_lock(&g_mu);
  bool missing = false;
  for (int i = 0; i < n && !missing; ++i)
    if (!(ips[i] & format::kFramePython) && !covered(ips[i])) missing = true;
  // Rescan only when a library was loaded since the last scan (JIT code is in no module and
  // must not cost a full scan every time). Reading the counter stops at the first object.
  if (missing && loader_list_usable()) {
    unsigned long long adds = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          *static_cast<unsigned long long*>(data) = info->dlpi_adds;
          return 1;
        },
        &adds);
    if (adds != g_scanned_adds) {
      OwnWork own;  // a rescan writes records and may grow the file: nothing may cancel it
      ScanState st{t};
      dl_iterate_phdr(record_module, &st);
      g_scanned_adds = adds;
    }
  }
  pthread_mutex_unlock(&g_mu);
}

void forget_modules() {
  pthread_mutex_init(&g_mu, nullptr);
  g_count = 0;
  g_scanned_adds = ~0ull;
}

}  // namespace vt
