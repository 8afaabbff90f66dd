// See live_tracker.h. The rules are format/accounting.h's (numbered there); this file only keeps
// the state they need in structures fit for the hook path.
#include "live_tracker.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace vt {

namespace {

// ---- live allocations and VMM handles (rule 2), sharded by key ----

enum : uint8_t { kEmpty = 0, kLive = 1, kDeleted = 2 };

struct Entry {
  uint64_t key;      // address, or handle | kHandleBit
  uint64_t size;
  uint64_t context;  // 0 for VMM handles: no teardown frees them (rule 6)
  uint32_t stack;
  int16_t device;
  uint8_t bucket;
  uint8_t state;     // kEmpty, kLive, kDeleted (a tombstone)
};
static_assert(sizeof(Entry) == 32);
constexpr uint64_t kHandleBit = 1ull << 63;  // handles and addresses never collide

// One shard: an open-addressing table in mmap'ed memory, grown (rehashed) under its lock.
struct Shard {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  Entry* slots = nullptr;
  uint64_t cap = 0, used = 0;
};
constexpr int kShards = 64;
Shard g_shards[kShards];

std::atomic<int64_t> g_live[kTrackedDevices + 1][kBuckets];  // last row: other devices
std::atomic<int64_t> g_peak[kTrackedDevices + 1];
std::atomic<int64_t>* g_sites = nullptr;  // kTrackedStacks counters, mmap'ed on first use

struct Guard {
  std::atomic_flag& f;
  explicit Guard(std::atomic_flag& flag) : f(flag) {
    while (f.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~Guard() { f.clear(std::memory_order_release); }
};

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}
Shard& shard_of(uint64_t key) { return g_shards[mix(key) % kShards]; }

void* map_zeroed(size_t bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? nullptr : m;
}

bool grow(Shard& s) {
  uint64_t cap = s.cap ? s.cap * 2 : 1024;
  Entry* fresh = static_cast<Entry*>(map_zeroed(cap * sizeof(Entry)));
  if (!fresh) return false;
  uint64_t used = 0;
  for (uint64_t i = 0; i < s.cap; ++i) {
    const Entry& e = s.slots[i];
    if (e.state != kLive) continue;
    uint64_t j = mix(e.key) & (cap - 1);
    while (fresh[j].state != kEmpty) j = (j + 1) & (cap - 1);
    fresh[j] = e;
    ++used;
  }
  if (s.slots) munmap(s.slots, s.cap * sizeof(Entry));
  s.slots = fresh;
  s.cap = cap;
  s.used = used;
  return true;
}

// Inserts e; when the key was already live (a free we never saw: rule 3), *replaced gets the old
// entry.
bool insert(const Entry& e, Entry* replaced, bool* had_old) {
  Shard& s = shard_of(e.key);
  Guard g(s.lock);
  *had_old = false;
  if ((s.used + 1) * 4 > s.cap * 3 && !grow(s)) return false;
  uint64_t j = mix(e.key) & (s.cap - 1), free_slot = ~0ull;
  for (; s.slots[j].state != kEmpty; j = (j + 1) & (s.cap - 1)) {
    if (s.slots[j].state == kLive && s.slots[j].key == e.key) {
      *replaced = s.slots[j];
      *had_old = true;
      s.slots[j] = e;
      return true;
    }
    if (s.slots[j].state == kDeleted && free_slot == ~0ull) free_slot = j;
  }
  if (free_slot == ~0ull) {
    free_slot = j;
    ++s.used;  // `used` counts live entries and tombstones: both lengthen probes
  }
  s.slots[free_slot] = e;
  return true;
}

bool erase(uint64_t key, Entry* out) {
  Shard& s = shard_of(key);
  Guard g(s.lock);
  if (!s.cap) return false;
  uint64_t j = mix(key) & (s.cap - 1);
  for (uint64_t n = 0; n < s.cap && s.slots[j].state != kEmpty; ++n, j = (j + 1) & (s.cap - 1)) {
    if (s.slots[j].state == kLive && s.slots[j].key == key) {
      *out = s.slots[j];
      s.slots[j].state = kDeleted;
      return true;
    }
  }
  return false;
}

int row(int device) { return device >= 0 && device < kTrackedDevices ? device : kTrackedDevices; }

void account(const Entry& e, int64_t sign) {
  int r = row(e.device);
  int64_t now = g_live[r][e.bucket].fetch_add(sign * int64_t(e.size), std::memory_order_relaxed) + sign * int64_t(e.size);
  if (e.bucket == kLiveDevice) {
    if (sign > 0) {
      int64_t p = g_peak[r].load(std::memory_order_relaxed);
      while (now > p && !g_peak[r].compare_exchange_weak(p, now, std::memory_order_relaxed)) {
      }
    }
    if (!g_sites) {
      void* m = map_zeroed(kTrackedStacks * sizeof(std::atomic<int64_t>));
      std::atomic<int64_t>* expected = nullptr;
      if (m && !__atomic_compare_exchange_n(&g_sites, &expected, static_cast<std::atomic<int64_t>*>(m), false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        munmap(m, kTrackedStacks * sizeof(std::atomic<int64_t>));
    }
    std::atomic<int64_t>* sites = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
    if (sites) sites[e.stack < kTrackedStacks ? e.stack : 0].fetch_add(sign * int64_t(e.size), std::memory_order_relaxed);
  }
}

void add(const Entry& en) {
  Entry old;
  bool had_old = false;
  if (!insert(en, &old, &had_old)) return;
  if (had_old) account(old, -1);
  account(en, +1);
}

void remove(uint64_t key) {
  Entry old;
  if (erase(key, &old)) account(old, -1);
}

// Rule 6: every address-keyed allocation of the context (handles carry context 0).
void drop_context(uint64_t ctx) {
  for (Shard& s : g_shards) {
    Entry dropped[64];
    int n;
    do {  // collect under the lock, account outside it
      n = 0;
      {
        Guard g(s.lock);
        for (uint64_t i = 0; i < s.cap && n < 64; ++i)
          if (s.slots[i].state == kLive && s.slots[i].context == ctx) {
            dropped[n++] = s.slots[i];
            s.slots[i].state = kDeleted;
          }
      }
      for (int i = 0; i < n; ++i) account(dropped[i], -1);
    } while (n == 64);
  }
}

// ---- pools (rule 4): where each pool created in this run lives, read without a lock ----

struct PoolSlot {
  std::atomic<uint64_t> pool{0};   // 0: free
  std::atomic<uint64_t> where{0};  // uint32 device | bucket << 32
};
PoolSlot g_pools[kTrackedPools];
std::atomic<int> g_pool_slots{0};  // slots ever used
std::atomic_flag g_pools_lock = ATOMIC_FLAG_INIT;

void pool_created(uint64_t pool, Placement at) {
  if (!pool) return;
  Guard g(g_pools_lock);
  int n = g_pool_slots.load(std::memory_order_relaxed);
  int slot = -1;
  for (int i = 0; i < n; ++i) {
    uint64_t p = g_pools[i].pool.load(std::memory_order_relaxed);
    if (p == pool) {
      slot = i;
      break;
    }
    if (p == 0 && slot < 0) slot = i;
  }
  if (slot < 0) {
    if (n == kTrackedPools) return;  // its allocations count on their event's device
    slot = n;
    g_pool_slots.store(n + 1, std::memory_order_release);
  }
  g_pools[slot].where.store(uint32_t(at.device) | uint64_t(at.bucket) << 32, std::memory_order_relaxed);
  g_pools[slot].pool.store(pool, std::memory_order_release);
}

void pool_destroyed(uint64_t pool) {
  Guard g(g_pools_lock);
  int n = g_pool_slots.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (g_pools[i].pool.load(std::memory_order_relaxed) == pool) g_pools[i].pool.store(0, std::memory_order_release);
}

bool pool_placement(uint64_t pool, Placement* at) {
  int n = g_pool_slots.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (g_pools[i].pool.load(std::memory_order_acquire) == pool) {
      uint64_t w = g_pools[i].where.load(std::memory_order_relaxed);
      *at = {int32_t(uint32_t(w)), Bucket(w >> 32)};
      return true;
    }
  return false;
}

// ---- VMM mappings (rule 5), under one spinlock ----

struct Mapping {
  uint64_t va, size, handle;
};
struct HandleUse {  // a handle with mappings, or released and still mapped
  uint64_t handle;  // 0: empty
  uint32_t mappings;
  uint8_t released;
};

// A growable array in mmap'ed memory.
template <typename T>
struct MmapVec {
  T* p = nullptr;
  size_t n = 0, cap = 0;
  bool reserve_one() {
    if (n < cap) return true;
    size_t c = cap ? cap * 2 : 256;
    T* q = static_cast<T*>(map_zeroed(c * sizeof(T)));
    if (!q) return false;
    if (p) {
      memcpy(q, p, n * sizeof(T));
      munmap(p, cap * sizeof(T));
    }
    p = q;
    cap = c;
    return true;
  }
  void clear() {
    if (p) munmap(p, cap * sizeof(T));
    p = nullptr;
    n = cap = 0;
  }
};

struct Vmm {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  MmapVec<Mapping> maps;  // sorted by va
  // Handles in use, open addressing with backward-shift deletion (no tombstones: VMM churn never
  // degrades it). Load at most 1/2.
  HandleUse* use = nullptr;
  size_t use_cap = 0, use_n = 0;

  HandleUse* find(uint64_t h) {
    if (!use_cap) return nullptr;
    for (size_t j = mix(h) & (use_cap - 1);; j = (j + 1) & (use_cap - 1)) {
      if (use[j].handle == h) return &use[j];
      if (use[j].handle == 0) return nullptr;
    }
  }
  HandleUse* get(uint64_t h) {  // inserting {h, 0, 0} when absent; nullptr when out of memory
    if (HandleUse* u = find(h)) return u;
    if ((use_n + 1) * 2 > use_cap && !rehash(use_cap ? use_cap * 2 : 256)) return nullptr;
    size_t j = mix(h) & (use_cap - 1);
    while (use[j].handle) j = (j + 1) & (use_cap - 1);
    use[j] = {h, 0, 0};
    ++use_n;
    return &use[j];
  }
  void drop(HandleUse* u) {
    size_t i = size_t(u - use);
    use[i].handle = 0;
    --use_n;
    for (size_t j = (i + 1) & (use_cap - 1); use[j].handle; j = (j + 1) & (use_cap - 1)) {
      size_t home = mix(use[j].handle) & (use_cap - 1);
      // Move j back into the hole at i when its home is not in (i, j].
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
        use[i] = use[j];
        use[j].handle = 0;
        i = j;
      }
    }
  }
  bool rehash(size_t cap) {
    HandleUse* fresh = static_cast<HandleUse*>(map_zeroed(cap * sizeof(HandleUse)));
    if (!fresh) return false;
    for (size_t i = 0; i < use_cap; ++i)
      if (use[i].handle) {
        size_t j = mix(use[i].handle) & (cap - 1);
        while (fresh[j].handle) j = (j + 1) & (cap - 1);
        fresh[j] = use[i];
      }
    if (use) munmap(use, use_cap * sizeof(HandleUse));
    use = fresh;
    use_cap = cap;
    return true;
  }
  size_t lower_bound(uint64_t va) const {
    size_t lo = 0, hi = maps.n;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (maps.p[mid].va < va) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  void clear() {
    maps.clear();
    if (use) munmap(use, use_cap * sizeof(HandleUse));
    use = nullptr;
    use_cap = use_n = 0;
  }
};
Vmm g_vmm;

// Drops a use entry with no mappings; true when the handle is then freed (it was released).
bool settle(HandleUse* u) {
  if (u->mappings > 0) return false;
  bool freed = handle_freed(u->released, 0);
  g_vmm.drop(u);
  return freed;
}

// Removes the mappings starting in [va, va + size); the handles this frees go to `freed`
// (at most `cap`; more stay for the caller's next round). Returns how many.
size_t unmap_locked(uint64_t va, uint64_t size, uint64_t* freed, size_t cap) {
  size_t k = 0;
  size_t i = g_vmm.lower_bound(va), j = i;
  MmapVec<Mapping>& m = g_vmm.maps;
  for (; j < m.n && unmap_removes(m.p[j].va, va, size) && k < cap; ++j) {
    if (HandleUse* u = g_vmm.find(m.p[j].handle)) {
      if (u->mappings > 0) u->mappings--;
      uint64_t h = u->handle;
      if (settle(u)) freed[k++] = h;
    }
  }
  memmove(m.p + i, m.p + j, (m.n - j) * sizeof(Mapping));
  m.n -= j - i;
  return k;
}

void vmm_unmap(uint64_t va, uint64_t size) {
  uint64_t freed[64];
  size_t k;
  do {
    {
      Guard g(g_vmm.lock);
      k = unmap_locked(va, size, freed, 64);
    }
    for (size_t i = 0; i < k; ++i) remove(freed[i] | kHandleBit);
  } while (k == 64);
}

void vmm_map(uint64_t va, uint64_t size, uint64_t handle) {
  uint64_t freed[1];
  size_t k = 0;
  {
    Guard g(g_vmm.lock);
    size_t i = g_vmm.lower_bound(va);
    if (i < g_vmm.maps.n && g_vmm.maps.p[i].va == va) k = unmap_locked(va, 1, freed, 1);  // rule 3
    HandleUse* u = g_vmm.maps.reserve_one() ? g_vmm.get(handle) : nullptr;
    if (u) {
      MmapVec<Mapping>& m = g_vmm.maps;
      i = g_vmm.lower_bound(va);
      memmove(m.p + i + 1, m.p + i, (m.n - i) * sizeof(Mapping));
      m.p[i] = {va, size, handle};
      m.n++;
      u->mappings++;
    }
  }
  if (k) remove(freed[0] | kHandleBit);
}

void vmm_release(uint64_t handle) {
  {
    Guard g(g_vmm.lock);
    HandleUse* u = g_vmm.find(handle);
    if (u && u->mappings > 0) {
      u->released = 1;  // freed at its last unmap
      return;
    }
    if (u) g_vmm.drop(u);
  }
  remove(handle | kHandleBit);
}

void vmm_created(uint64_t handle) {  // rule 3: a new handle is not released, whatever came before
  Guard g(g_vmm.lock);
  if (HandleUse* u = g_vmm.find(handle)) u->released = 0;
}

}  // namespace

void track_event(const Event& e) {
  if (!changes_memory(e.result)) return;  // rule 1
  const OpInfo& op = kOps[int(e.op)];
  Entry en{};
  en.size = e.size;
  en.context = e.context;
  en.stack = e.stack;
  en.device = int16_t(e.device);
  en.bucket = uint8_t(bucket_of(op.kind));
  en.state = kLive;
  switch (effect_of(op)) {
    case Effect::Allocate:
      if (!is_memory_key(e.addr)) return;
      en.key = e.addr;
      if (op.kind == MemKind::Async) {
        Placement at;
        if (uint64_t pool = named_pool(e); pool && pool_placement(pool, &at)) {
          if (at.device >= 0) en.device = int16_t(at.device);
          en.bucket = uint8_t(at.bucket);
        }
      }
      add(en);
      return;
    case Effect::Free:
      if (is_memory_key(e.addr)) remove(e.addr);
      return;
    case Effect::CreateHandle: {
      if (!is_memory_key(e.aux)) return;
      Placement at = placement_at(e.aux2, e.device);
      en.key = e.aux | kHandleBit;
      en.device = int16_t(at.device);
      en.bucket = uint8_t(at.bucket);
      en.context = 0;
      vmm_created(e.aux);
      add(en);
      return;
    }
    case Effect::ReleaseHandle: vmm_release(e.aux); return;
    case Effect::Map: vmm_map(e.addr, e.size, e.aux); return;
    case Effect::Unmap: vmm_unmap(e.addr, e.size); return;
    case Effect::CreatePool: pool_created(e.aux, placement_at(e.aux2, e.device)); return;
    case Effect::DestroyPool: pool_destroyed(e.aux); return;
    case Effect::Teardown:
      if (uint64_t ctx = torn_down_context(e.op, e)) drop_context(ctx);
      return;
    case Effect::Reserve:  // rule 7: no memory of their own
    case Effect::Unreserve:
    case Effect::TrimPool:
    case Effect::None: return;
  }
}

int64_t live_bytes(int device, int bucket) {
  if (bucket < 0 || bucket >= kBuckets) return -1;
  if (device >= 0) return g_live[row(device)][bucket].load(std::memory_order_relaxed);
  int64_t sum = 0;  // -1: all devices
  for (auto& r : g_live) sum += r[bucket].load(std::memory_order_relaxed);
  return sum;
}

int64_t peak_bytes(int device) {
  if (device >= 0) return g_peak[row(device)].load(std::memory_order_relaxed);
  int64_t best = 0;  // -1: the highest of all devices
  for (auto& p : g_peak) best = std::max(best, p.load(std::memory_order_relaxed));
  return best;
}

void reset_peak(int device) {
  for (int r = 0; r <= kTrackedDevices; ++r)
    if (device < 0 || r == row(device)) g_peak[r].store(g_live[r][kLiveDevice].load(std::memory_order_relaxed));
}

int64_t site_bytes(uint32_t stack) {
  std::atomic<int64_t>* sites = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
  return sites && stack < kTrackedStacks ? sites[stack].load(std::memory_order_relaxed) : 0;
}

void forget_live_state() {
  // The child's trace starts empty; so does what it reports as live.
  for (Shard& s : g_shards) {
    s.lock.clear();
    if (s.slots) munmap(s.slots, s.cap * sizeof(Entry));
    s.slots = nullptr;
    s.cap = s.used = 0;
  }
  g_vmm.lock.clear();
  g_vmm.clear();
  g_pools_lock.clear();
  for (PoolSlot& p : g_pools) p.pool.store(0);
  g_pool_slots.store(0);
  for (auto& r : g_live)
    for (auto& b : r) b.store(0);
  for (auto& p : g_peak) p.store(0);
  std::atomic<int64_t>* sites = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
  if (sites)
    for (uint32_t i = 0; i < kTrackedStacks; ++i) sites[i].store(0);
}

}  // namespace vt
