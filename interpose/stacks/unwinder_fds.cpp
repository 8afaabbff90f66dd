// See unwinder_fds.h.
#include "load_steps.h"
#include "unwinder_fds.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstring>

#include "loaded_symbol.h"
#include "unwinder_library.h"

namespace vt {

namespace {

// The pipe libunwind holds now: its two descriptors and the pipe's inode.
std::atomic<int> g_end[2] = {-1, -1};
std::atomic<uint64_t> g_ino{0};
std::atomic<uint64_t> g_dev{0};

bool is_end(int fd) { return fd >= 0 && (fd == g_end[0].load() || fd == g_end[1].load()); }

// No pipe at all where the kernel lets us check an address without one: libunwind's pipe only
// asks "can this byte be read?" (it writes one byte from the address into the pipe: EFAULT if
// not), and process_vm_readv on our own process answers the same without a descriptor. Its
// "pipe" is then two numbers no descriptor can have (above fs.nr_open's ceiling): reads say
// empty, a one-byte write is the check, close does nothing.
constexpr int kFakeRead = 0x7ffffff0, kFakeWrite = 0x7ffffff1;
bool is_fake(int fd) { return fd == kFakeRead || fd == kFakeWrite; }

// 1 when the byte at addr can be read, -1 (EFAULT) when not; 0 when the check is unavailable.
int readable(const void* addr) {
  char byte;
  struct iovec local = {&byte, 1}, remote = {const_cast<void*>(addr), 1};
  long pid = syscall(SYS_getpid);
  if (pid <= 0) return 0;
  long n = syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
  if (n == 1) return 1;
  return errno == EFAULT ? -1 : 0;
}

ssize_t fake_write(const void* addr, size_t n) {
  if (n == 0) return 0;
  if (readable(addr) > 0) return 1;
  errno = EFAULT;
  return -1;
}

bool still_our_pipe(int fd) {
  struct stat st;
  return syscall(SYS_fstat, fd, &st) == 0 && S_ISFIFO(st.st_mode) && uint64_t(st.st_ino) == g_ino.load() &&
         uint64_t(st.st_dev) == g_dev.load();
}

int move_high(int fd) {
  struct rlimit lim;
  rlim_t top = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
  if (top > 1024) top = 1024;
  if (top < 16) return fd;  // (a limit of 16 or more: three quarters up, above the trace's descriptor)
  long high = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, long(top >= 128 ? top - 32 : top * 3 / 4));
  if (high < 0) return fd;
  syscall(SYS_close, fd);
  return int(high);
}

int unw_pipe2(int fds[2], int flags) {
  static const char probe = 1;
  if (readable(&probe) > 0) {  // no descriptor needed
    fds[0] = kFakeRead;
    fds[1] = kFakeWrite;
    return 0;
  }
  if (syscall(SYS_pipe2, fds, flags) != 0) return -1;
  fds[0] = move_high(fds[0]);
  fds[1] = move_high(fds[1]);
  struct stat st;
  if (syscall(SYS_fstat, fds[0], &st) == 0) {
    g_ino.store(uint64_t(st.st_ino));
    g_dev.store(uint64_t(st.st_dev));
    g_end[0].store(fds[0]);
    g_end[1].store(fds[1]);
  }
  return 0;
}

ssize_t unw_read(int fd, void* buf, size_t n) {
  if (is_fake(fd)) {
    errno = EAGAIN;  // an empty pipe
    return -1;
  }
  if (is_end(fd) && !still_our_pipe(fd)) {
    errno = EBADF;  // libunwind then makes a new pipe; the program's file is not read
    return -1;
  }
  return syscall(SYS_read, fd, buf, n);
}

ssize_t unw_write(int fd, const void* buf, size_t n) {
  if (is_fake(fd)) return fake_write(buf, n);
  if (is_end(fd) && !still_our_pipe(fd)) {
    errno = EBADF;
    return -1;
  }
  return syscall(SYS_write, fd, buf, n);
}

int unw_close(int fd) {
  if (is_fake(fd)) return 0;
  if (is_end(fd)) {
    bool ours = still_our_pipe(fd);
    int expected = fd;
    if (!g_end[0].compare_exchange_strong(expected, -1)) {
      expected = fd;
      g_end[1].compare_exchange_strong(expected, -1);
    }
    if (!ours) return 0;  // that number is the program's now: leave it open
  }
  return int(syscall(SYS_close, fd));
}

int unw_msync(void* addr, size_t len, int flags) { return int(syscall(SYS_msync, addr, len, flags)); }

int unw_open(const char* path, int flags, ...) {
  unsigned mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, unsigned);
    va_end(ap);
  }
  return int(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}

long unw_syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& x : a) x = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_write && is_fake(int(a[0]))) return fake_write(reinterpret_cast<const void*>(a[1]), size_t(a[2]));
  if (number == SYS_write && is_end(int(a[0])) && !still_our_pipe(int(a[0]))) {
    errno = EBADF;
    return -1;
  }
  return syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

struct Redirect {
  const char* name;
  void* to;
};
const Redirect kRedirects[] = {
    {"pipe2", reinterpret_cast<void*>(&unw_pipe2)},  {"read", reinterpret_cast<void*>(&unw_read)},
    {"write", reinterpret_cast<void*>(&unw_write)},  {"close", reinterpret_cast<void*>(&unw_close)},
    {"msync", reinterpret_cast<void*>(&unw_msync)},  {"syscall", reinterpret_cast<void*>(&unw_syscall)},
    {"open", reinterpret_cast<void*>(&unw_open)},
};

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT;
#endif

// Rewrites the GOT slots of one object's relocations [rel, rel + size) that name a redirected
// function. The slot's page may be RELRO (read-only after start-up): made writable for the store.
int patch(dl_phdr_info* info, const ElfW(Rela)* rel, size_t size, const ElfW(Sym)* symtab, const char* strtab) {
  int patched = 0;
  long page = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < size / sizeof *rel; ++i) {
    uint32_t type = uint32_t(ELF64_R_TYPE(rel[i].r_info));
    if (type != kJumpSlot && type != kGlobDat) continue;
    const char* name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
    for (const Redirect& r : kRedirects) {
      if (strcmp(name, r.name) != 0) continue;
      void** slot = reinterpret_cast<void**>(info->dlpi_addr + rel[i].r_offset);
      uintptr_t start = reinterpret_cast<uintptr_t>(slot) & ~uintptr_t(page - 1);
      bool relro = false;
      for (int p = 0; p < info->dlpi_phnum; ++p) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[p];
        uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        if (ph.p_type == PT_GNU_RELRO && uintptr_t(slot) >= lo && uintptr_t(slot) < lo + ph.p_memsz) relro = true;
      }
      if (relro && mprotect(reinterpret_cast<void*>(start), size_t(page), PROT_READ | PROT_WRITE) != 0) break;
      __atomic_store_n(slot, r.to, __ATOMIC_RELEASE);
      if (relro) mprotect(reinterpret_cast<void*>(start), size_t(page), PROT_READ);
      ++patched;
    }
  }
  return patched;
}

// Only the copy we opened (unwinder_library.h), by where it is mapped: a libunwind of the program's
// own is the program's business.
int patch_libunwind(dl_phdr_info* info, size_t, void* found) {
  const Unwinder* ours = unwinder();
  if (!ours || info->dlpi_addr != ours->base) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  for (int p = 0; p < info->dlpi_phnum; ++p)
    if (info->dlpi_phdr[p].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
  if (!dyn) return 0;
  // ld.so relocates these d_ptr values in place on x86-64 and aarch64; a raw one is made absolute.
  auto addr = [&](ElfW(Addr) v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
  const ElfW(Rela)*jmprel = nullptr, *rela = nullptr;
  size_t jmprel_size = 0, rela_size = 0;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(addr(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr)); break;
      default: break;
    }
  }
  if (!symtab || !strtab) return 0;
  int n = 0;
  if (jmprel) n += patch(info, jmprel, jmprel_size, symtab, strtab);
  if (rela) n += patch(info, rela, rela_size, symtab, strtab);
  *static_cast<int*>(found) += n;
  return 0;
}

}  // namespace

bool guard_unwinder_descriptors() {
  int patched = 0;
  if (loader_list_usable()) dl_iterate_phdr(patch_libunwind, &patched);
  return patched > 0;
}

namespace {
// Before anything can unwind (libunwind opens its pipe at its first use).
void guard_at_load() {
  if (other_vramtrace(_DYNAMIC, true)) return;  // another copy of ours, loaded first, does it
  int saved = errno;
  guard_unwinder_descriptors();
  errno = saved;
}
}  // namespace

}  // namespace vt

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void guard_at_load() { vt::guard_at_load(); }
}  // namespace vt::load_steps
