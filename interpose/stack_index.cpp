// See stack_index.h.
#include "stack_index.h"

#include <sched.h>
#include <sys/mman.h>

#include <atomic>

#include "module_map.h"
#include "recorder_internal.h"
#include "meta_records.h"

namespace vt {

namespace {

constexpr uint64_t kSlots = 1u << 20;  // 16 MiB of address space, touched only where used
struct Slot {
  std::atomic<uint64_t> hash;
  std::atomic<uint32_t> id;
  uint32_t pad;
};
std::atomic<Slot*> g_table_ready{nullptr};
std::atomic<uint32_t> g_next_id{1};
std::atomic<uint32_t> g_index_generation{1};

// Recently seen stacks of this thread: hash -> id.
constexpr int kThreadCache = 16;
struct ThreadCache {
  uint64_t hash[kThreadCache];
  uint32_t id[kThreadCache];
  uint32_t generation;
  uint32_t next;
};
thread_local ThreadCache t_cache __attribute__((tls_model("initial-exec")));

}  // namespace

uint64_t hash_frames(const uint64_t* f, int n, uint64_t seed) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(n) ^ seed;
  for (int i = 0; i < n; ++i) {
    h ^= f[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  h ^= h >> 33;
  return h ? h : 1;  // 0 marks an empty slot
}

namespace {

Slot* table() {
  Slot* t = g_table_ready.load(std::memory_order_acquire);
  if (t) return t;
  void* m = mmap(nullptr, kSlots * sizeof(Slot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Slot* expected = nullptr;
  if (!g_table_ready.compare_exchange_strong(expected, static_cast<Slot*>(m))) {
    munmap(m, kSlots * sizeof(Slot));
    return expected;
  }
  return static_cast<Slot*>(m);
}

void write_stack_record(uint32_t id, const uint64_t* key, int key_n, uint64_t t, TraceFrames to_trace) {
  uint64_t frames[512];
  int n = to_trace(key, key_n < 512 ? key_n : 512, frames, t);
  ensure_modules(frames, n, t);
  if (n > 256) n = 256;
  uint8_t buf[16 + 256 * format::kMaxVarint];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::StackSchema>(p, format::StackRecord{id, uint32_t(n)});
  for (int i = 0; i < n; ++i) format::encode<format::StackFrameSchema>(p, format::StackFrameRow{frames[i]});
  write_meta(format::kTagStack, p.data(), p.size(), t);
}

}  // namespace

uint32_t intern_stack(const uint64_t* frames, int n, uint64_t t, TraceFrames to_trace) {
  return n <= 0 ? 0 : intern_stack_hashed(frames, n, hash_frames(frames, n, 0), t, to_trace);
}

uint32_t intern_stack_hashed(const uint64_t* frames, int n, uint64_t h, uint64_t t, TraceFrames to_trace) {
  if (n <= 0) return 0;
  ThreadCache& c = t_cache;
  uint32_t gen = g_index_generation.load(std::memory_order_relaxed);
  if (c.generation != gen) {
    c = ThreadCache{};
    c.generation = gen;
  }
  for (int i = 0; i < kThreadCache; ++i)
    if (c.hash[i] == h) return c.id[i];

  uint32_t id = 0;
  Slot* tab = table();
  if (tab) {
    for (uint64_t probe = 0; probe < kSlots && id == 0; ++probe) {
      Slot& s = tab[(h + probe) & (kSlots - 1)];
      uint64_t cur = s.hash.load(std::memory_order_acquire);
      if (cur == 0) {
        if (s.hash.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) {
          // Ours: write the record first, then publish the id.
          uint32_t fresh = g_next_id.fetch_add(1, std::memory_order_relaxed);
          write_stack_record(fresh, frames, n, t, to_trace);
          s.id.store(fresh, std::memory_order_release);
          id = fresh;
          break;
        }
      }
      if (cur == h) {
        // Another thread is writing this stack's record: it takes microseconds.
        for (int spin = 0; (id = s.id.load(std::memory_order_acquire)) == 0; ++spin)
          if (spin > 64) sched_yield();
      }
    }
  }
  if (id == 0) {  // table full or unavailable: no dedup for this one
    id = g_next_id.fetch_add(1, std::memory_order_relaxed);
    write_stack_record(id, frames, n, t, to_trace);
  }
  c.hash[c.next] = h;
  c.id[c.next] = id;
  c.next = (c.next + 1) % kThreadCache;
  return id;
}

void forget_stacks() {
  // The child gets a fresh table: the parent's ids refer to the parent's file.
  g_table_ready.store(nullptr);
  g_next_id.store(1);
  g_index_generation.fetch_add(1);
}

}  // namespace vt
