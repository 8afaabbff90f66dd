// See request_probe.h.
#include "request_probe.h"

#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "loaded_symbol.h"

// The thread's note, and the real `allocate`, for the trampoline below (C names: asm reaches them).
extern "C" {
__attribute__((visibility("hidden"))) __thread uint64_t vt_torch_request __attribute__((tls_model("initial-exec"))) = 0;
__attribute__((visibility("hidden"))) void* vt_torch_allocate_real = nullptr;
void vt_torch_allocate_probe();
}

#if defined(__x86_64__)
// DataPtr allocate(size_t n) is a member returning a class by hidden pointer: rdi = the result,
// rsi = this, rdx = n (Itanium C++ ABI). Only r11 (scratch, never an argument) is written.
asm(R"(
  .text
  .globl vt_torch_allocate_probe
  .hidden vt_torch_allocate_probe
  .type vt_torch_allocate_probe, @function
vt_torch_allocate_probe:
  .cfi_startproc
  movq vt_torch_request@gottpoff(%rip), %r11
  movq %rdx, %fs:(%r11)
  jmp *vt_torch_allocate_real(%rip)
  .cfi_endproc
  .size vt_torch_allocate_probe, .-vt_torch_allocate_probe
)");
#endif

namespace vt {

namespace {

constexpr int kAllocateSlot = 2;  // after the complete and the deleting destructor
constexpr int kMaxSlots = 256;

// The loaded objects' segments, read once through dl_iterate_phdr (no loader lock).
struct Range {
  uintptr_t lo, hi;
  int object;
  bool exec, writable, relro;
};
struct Ranges {
  Range r[1024];
  int n = 0, objects = 0;
};

int collect(struct dl_phdr_info* info, size_t, void* data) {
  Ranges& rs = *static_cast<Ranges*>(data);
  int object = rs.objects++;
  for (int i = 0; i < info->dlpi_phnum && rs.n < 1024; i++) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD && p.p_type != PT_GNU_RELRO) continue;
    uintptr_t lo = info->dlpi_addr + p.p_vaddr;
    rs.r[rs.n++] = Range{lo, lo + p.p_memsz, object, p.p_type == PT_LOAD && (p.p_flags & PF_X),
                         p.p_type == PT_LOAD && (p.p_flags & PF_W), p.p_type == PT_GNU_RELRO};
  }
  return 0;
}

// The object holding `a` (-1: none); *exec / *readonly whether a segment there says so.
int object_of(const Ranges& rs, uintptr_t a, bool* exec, bool* readonly) {
  int object = -1;
  bool x = false, ro = false;
  for (int i = 0; i < rs.n; i++) {
    const Range& r = rs.r[i];
    if (a < r.lo || a >= r.hi) continue;
    object = r.object;
    x |= r.exec;
    ro |= r.relro || !(r.writable || r.exec);
  }
  if (exec) *exec = x;
  if (readonly) *readonly = ro;
  return object;
}

void* g_table[2 + kMaxSlots];  // offset-to-top, type info, then the entries
// The segments, read once (24 KiB kept off the allocator thread's stack). At namespace scope: a
// function-local static would need libstdc++'s guard, which libvramtrace.so does not link.
Ranges g_ranges;

bool refuse(char* why, size_t size, const char* what) {
  snprintf(why, size, "%s", what);
  return false;
}

}  // namespace

bool install_request_probe(const void* skip, char* why, size_t why_size) {
#if !defined(__x86_64__)
  return refuse(why, why_size, "not on this architecture");
#else
  const char* env = getenv("VRAMTRACE_TORCH_REQUESTS");
  if (env && strcmp(env, "0") == 0) return refuse(why, why_size, "VRAMTRACE_TORCH_REQUESTS=0");
  if (!loader_list_usable()) return refuse(why, why_size, "the loader's list cannot be walked here");
  const char* path = "";
  auto* sym = static_cast<void**>(find_loaded_symbol(kTorchAllocatorSymbol, skip, &path));
  if (!sym) return refuse(why, why_size, "c10::cuda::CUDACachingAllocator::allocator not found");
  void* obj = __atomic_load_n(sym, __ATOMIC_ACQUIRE);
  if (!obj) return refuse(why, why_size, "no allocator object yet");
  Ranges& rs = g_ranges;
  rs.n = rs.objects = 0;
  dl_iterate_phdr(collect, &rs);
  int library = object_of(rs, reinterpret_cast<uintptr_t>(sym), nullptr, nullptr);
  bool obj_exec, obj_readonly;
  object_of(rs, reinterpret_cast<uintptr_t>(obj), &obj_exec, &obj_readonly);
  if (library < 0 || obj_readonly || obj_exec) return refuse(why, why_size, "the allocator object is not writable data");
  void** vtable = *static_cast<void***>(obj);
  if (object_of(rs, reinterpret_cast<uintptr_t>(vtable), nullptr, nullptr) != library)
    return refuse(why, why_size, "the allocator's virtual table is not in its library");
  int slots = 0;
  for (; slots < kMaxSlots; slots++) {
    bool exec = false;
    if (object_of(rs, reinterpret_cast<uintptr_t>(vtable[slots]), &exec, nullptr) < 0 || !exec) break;
  }
  if (slots <= kAllocateSlot || slots == kMaxSlots) return refuse(why, why_size, "the allocator's virtual table is not one");
  g_table[0] = vtable[-2];
  g_table[1] = vtable[-1];
  memcpy(&g_table[2], vtable, sizeof(void*) * size_t(slots));
  vt_torch_allocate_real = vtable[kAllocateSlot];
  g_table[2 + kAllocateSlot] = reinterpret_cast<void*>(&vt_torch_allocate_probe);
  __atomic_store_n(static_cast<void***>(obj), &g_table[2], __ATOMIC_RELEASE);
  why[0] = '\0';
  return true;
#endif
}

uint64_t take_request() {
  uint64_t n = vt_torch_request;
  vt_torch_request = 0;
  return n;
}

}  // namespace vt
