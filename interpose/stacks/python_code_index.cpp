// See python_code_index.h.
#include "python_code_index.h"

#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "python_frames.h"
#include "recorder_internal.h"
#include "meta_records.h"

namespace vt {

namespace {

constexpr uint64_t kSlots = 1u << 18;
struct Slot {
  std::atomic<uint64_t> code;
  std::atomic<uint32_t> id;  // 0 while its record is being written; ~0u if it cannot be described
  uint32_t pad;
};
std::atomic<Slot*> g_table{nullptr};
std::atomic<uint32_t> g_next{1};
constexpr uint32_t kUndescribable = ~0u;

Slot* table() {
  Slot* t = g_table.load(std::memory_order_acquire);
  if (t) return t;
  void* m = mmap(nullptr, kSlots * sizeof(Slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Slot* expected = nullptr;
  if (!g_table.compare_exchange_strong(expected, static_cast<Slot*>(m))) {
    munmap(m, kSlots * sizeof(Slot));
    return expected;
  }
  return static_cast<Slot*>(m);
}

uint32_t describe_and_write(uint64_t code, uint64_t t) {
  py::CodeInfo info;  // ~5 KiB on the stack, only for a code object seen for the first time
  if (!py::describe_code(code, &info)) return kUndescribable;
  uint32_t id = g_next.fetch_add(1, std::memory_order_relaxed);
  format::PyCodeRecord r{id, uint32_t(info.py_minor), uint64_t(info.firstlineno),
                         format::Text(info.filename, strnlen(info.filename, sizeof info.filename)),
                         format::Text(info.qualname, strnlen(info.qualname, sizeof info.qualname)),
                         format::Text(reinterpret_cast<const char*>(info.linetable), info.linetable_len)};
  uint8_t buf[sizeof(py::CodeInfo) + 64];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::PyCodeSchema>(p, r);
  write_meta(format::kTagPyCode, p.data(), p.size(), t);
  return id;
}

uint64_t mix(uint64_t k) {
  k ^= k >> 31;
  k *= 0x9e3779b97f4a7c15ull;
  return k ^ (k >> 29);
}

}  // namespace

uint32_t python_code_id(uint64_t code, uint64_t t) {
  Slot* tab = table();
  if (!tab || !code) return 0;
  for (uint64_t probe = 0; probe < 64; ++probe) {
    Slot& s = tab[(mix(code) + probe) & (kSlots - 1)];
    uint64_t cur = s.code.load(std::memory_order_acquire);
    if (cur == 0 && s.code.compare_exchange_strong(cur, code, std::memory_order_acq_rel)) {
      uint32_t id = describe_and_write(code, t);
      s.id.store(id, std::memory_order_release);
      return id == kUndescribable ? 0 : id;
    }
    if (cur == code) {
      uint32_t id;
      for (int spin = 0; (id = s.id.load(std::memory_order_acquire)) == 0; ++spin)
        if (spin > 64) sched_yield();
      return id == kUndescribable ? 0 : id;
    }
  }
  return 0;  // a crowded neighbourhood: leave this frame out rather than wait
}

void forget_python_codes() {
  g_table.store(nullptr);
  g_next.store(1);
}

}  // namespace vt
