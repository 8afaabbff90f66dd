// See stack_index.h.
#include "stack_index.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "module_map.h"
#include "recorder_internal.h"
#include "thread_block.h"
#include "meta_records.h"

namespace vt {

namespace {

// The table grows by levels: level k has 2^(20+k) slots (16 MiB of address space at level 0,
// touched only where used) and takes new stacks until it is half full; lookups search every
// level. Nothing moves, so no lookup ever waits for a growth. (Two threads inserting one new
// stack while a level is added may give it two ids: harmless, both records hold its frames.)
// Beyond the last level (2^20 + ... + 2^26 slots: ~64 M stacks) stacks are written without dedup.
constexpr int kLevels = 7;
constexpr int kLevel0Bits = 20;
struct Slot {
  std::atomic<uint64_t> hash;
  std::atomic<uint32_t> id;
  uint32_t pad;
};
struct Level {
  std::atomic<Slot*> slots{nullptr};
  std::atomic<uint64_t> used{0};
};
Level g_levels[kLevels];
std::atomic<int> g_top_level{0};  // the level that takes new stacks
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

namespace {

uint64_t level_size(int k) { return 1ull << (kLevel0Bits + k); }

Slot* level_slots(int k) {
  Level& l = g_levels[k];
  Slot* t = l.slots.load(std::memory_order_acquire);
  if (t) return t;
  void* m = mmap(nullptr, level_size(k) * sizeof(Slot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Slot* expected = nullptr;
  if (!l.slots.compare_exchange_strong(expected, static_cast<Slot*>(m))) {
    munmap(m, level_size(k) * sizeof(Slot));
    return expected;
  }
  return static_cast<Slot*>(m);
}

// The id of hash `h` in level k: 0 when absent. A level is at most half full (the top one at
// most three quarters, in a race), so a probe meets an empty slot soon.
uint32_t find_in_level(int k, uint64_t h) {
  Slot* tab = g_levels[k].slots.load(std::memory_order_acquire);
  if (!tab) return 0;
  uint64_t mask = level_size(k) - 1;
  for (uint64_t probe = 0; probe <= mask; ++probe) {
    Slot& s = tab[(h + probe) & mask];
    uint64_t cur = s.hash.load(std::memory_order_acquire);
    if (cur == 0) return 0;
    if (cur == h) {
      uint32_t id;
      // Another thread is writing this stack's record: it takes microseconds.
      for (int spin = 0; (id = s.id.load(std::memory_order_acquire)) == 0; ++spin)
        if (spin > 64) sched_yield();
      return id;
    }
  }
  return 0;
}

// The stack record this thread wrote last (its frames as written): the base of the next one's
// delta (meta_records.h, StackDeltaRecord). Only the writing thread's own records are bases, so a
// base always sorts before the delta in the thread's chunks.
constexpr int kMaxWritten = 256;
struct LastWritten {
  uint64_t frames[kMaxWritten];
  uint32_t n;
  uint32_t id;  // 0: none yet (or from before a fork)
  uint32_t generation;
};
// Mapped on a thread's first stack record and unmapped when it exits (2 KiB: too big for the
// static TLS a preloaded library may take). Without one, records are written whole.
thread_local LastWritten* t_last __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_last_failed __attribute__((tls_model("initial-exec"))) = false;
pthread_key_t g_last_key;
bool g_last_key_ok = [] { return pthread_key_create(&g_last_key, [](void* m) {
                                  // Runs in the exiting thread; later records go without a base.
                                  t_last = nullptr;
                                  t_last_failed = true;
                                  munmap(m, sizeof(LastWritten));
                                }) == 0; }();

LastWritten* last_written() {
  if (LastWritten* l = t_last) return l;
  if (t_last_failed || !g_last_key_ok) return nullptr;
  void* m = map_thread_block(g_last_key, sizeof(LastWritten));
  if (!m) {
    t_last_failed = true;
    return nullptr;
  }
  return t_last = static_cast<LastWritten*>(m);  // zero-filled: id 0, no base
}

void write_stack_record(uint32_t id, const uint64_t* key, int key_n, uint64_t t, TraceFrames to_trace) {
  uint64_t frames[512];
  int n = to_trace(key, key_n < 512 ? key_n : 512, frames, t);
  ensure_modules(frames, n, t);
  if (n > kMaxWritten) n = kMaxWritten;
  uint8_t buf[32 + kMaxWritten * format::kMaxVarint];
  format::PayloadWriter p(buf, sizeof buf);
  LastWritten* last = last_written();
  uint32_t gen = g_index_generation.load(std::memory_order_relaxed);
  if (last && last->generation != gen) {  // forked since: the base is in the parent's trace
    last->id = 0;
    last->generation = gen;
  }
  // What this stack shares with the last one at either end. The ids of one thread's records
  // grow, so base_back > 0 when there is a base.
  uint32_t un = uint32_t(n), inner = 0, outer = 0;
  if (last && last->id != 0 && last->id < id) {
    uint32_t m = un < last->n ? un : last->n;
    while (inner < m && frames[inner] == last->frames[inner]) ++inner;
    while (inner + outer < m && frames[un - 1 - outer] == last->frames[last->n - 1 - outer]) ++outer;
  }
  bool written;
  if (inner + outer > 0) {
    uint32_t fresh = un - inner - outer;
    format::encode<format::StackDeltaSchema>(p, format::StackDeltaRecord{id, id - last->id, inner, outer, fresh});
    for (uint32_t i = inner; i < inner + fresh; ++i) {
      uint64_t ref = format::stack_delta_reference(last->frames, last->n, outer, frames, i);
      format::encode<format::StackDeltaFrameSchema>(p, format::StackDeltaFrameRow{int64_t(frames[i] - ref)});
    }
    written = write_meta(format::kTagStackDelta, p.data(), p.size(), t);
  } else {
    format::encode<format::StackSchema>(p, format::StackRecord{id, un});
    for (uint32_t i = 0; i < un; ++i) format::encode<format::StackFrameSchema>(p, format::StackFrameRow{frames[i]});
    written = write_meta(format::kTagStack, p.data(), p.size(), t);
  }
  if (!last) return;
  if (!written) {  // a record that is not in the trace cannot be a base
    last->id = 0;
    return;
  }
  memcpy(last->frames, frames, un * sizeof(uint64_t));
  last->n = un;
  last->id = id;
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
  int top = g_top_level.load(std::memory_order_acquire);
  for (int k = top; k >= 0 && id == 0; --k) id = find_in_level(k, h);
  while (id == 0 && top < kLevels) {
    Slot* tab = level_slots(top);
    Level& l = g_levels[top];
    if (!tab || l.used.load(std::memory_order_relaxed) >= level_size(top) / 2) {
      // Full (or unmappable): new stacks go to the next level from now on.
      int expected = top;
      g_top_level.compare_exchange_strong(expected, top + 1 < kLevels ? top + 1 : top);
      if (top + 1 >= kLevels || !tab) break;
      ++top;
      continue;
    }
    uint64_t mask = level_size(top) - 1;
    for (uint64_t probe = 0; probe <= mask; ++probe) {
      Slot& s = tab[(h + probe) & mask];
      uint64_t cur = s.hash.load(std::memory_order_acquire);
      if (cur == 0 && s.hash.compare_exchange_strong(cur, h, std::memory_order_acq_rel)) {
        // Ours: write the record first, then publish the id.
        l.used.fetch_add(1, std::memory_order_relaxed);
        uint32_t fresh = g_next_id.fetch_add(1, std::memory_order_relaxed);
        write_stack_record(fresh, frames, n, t, to_trace);
        s.id.store(fresh, std::memory_order_release);
        id = fresh;
        break;
      }
      if (cur == h) {
        for (int spin = 0; (id = s.id.load(std::memory_order_acquire)) == 0; ++spin)
          if (spin > 64) sched_yield();
        break;
      }
    }
    break;
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
  // The child gets fresh tables: the parent's ids refer to the parent's file. (The parent's
  // levels stay mapped in the child, unused.)
  for (Level& l : g_levels) {
    l.slots.store(nullptr);
    l.used.store(0);
  }
  g_top_level.store(0);
  g_next_id.store(1);
  g_index_generation.fetch_add(1);
}

}  // namespace vt
