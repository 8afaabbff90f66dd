// See live_tracker.h. The rules are format/accounting.h's (numbered there); this file only keeps
// the state they need in structures fit for the hook path.
#include "live_tracker.h"

#include "live_counters.h"
#include "live_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>

namespace vt {

namespace {

// ---- live allocations and VMM handles (rule 2) ----

// Addresses and handles are two key spaces (a handle never matches an address): two maps.
enum : uint8_t { kAddress = 1, kHandle = 2 };
live::Map g_addresses, g_handles;
live::Map& map_of(uint8_t space) { return space == kHandle ? g_handles : g_addresses; }

std::atomic<int64_t>* g_sites = nullptr;  // kTrackedStacks counters, mmap'ed on first use

// A spinlock for the rare events (VMM mappings, pool creation): held for a few table operations,
// never across a call that can block (except the mmap of a growing table) or a cancellation point.
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

void* map_zeroed(size_t bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? nullptr : m;
}

int row(int device) { return live_row(device); }

// The per-event helpers below are always inlined into track_event's two hot paths (allocate,
// free): out of line they cost ~25 instructions per event in calls and spills (callgrind).
#define VT_HOT inline __attribute__((always_inline))

__attribute__((noinline)) std::atomic<int64_t>* map_sites() {
  void* m = map_zeroed(kTrackedStacks * sizeof(std::atomic<int64_t>));
  if (!m) return nullptr;
  std::atomic<int64_t>* expected = nullptr;
  if (__atomic_compare_exchange_n(&g_sites, &expected, static_cast<std::atomic<int64_t>*>(m), false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return static_cast<std::atomic<int64_t>*>(m);
  munmap(m, kTrackedStacks * sizeof(std::atomic<int64_t>));  // another thread's won
  return expected;
}
// The first device event with a stack: the per-site table is mapped, then the event accounted.
__attribute__((noinline)) void account_mapping_sites(uint32_t stack, int row, int bucket, int64_t delta) {
  if (std::atomic<int64_t>* s = map_sites()) s[stack].fetch_add(delta, std::memory_order_relaxed);
  live::add_bytes(row, bucket, delta);
}

// Every slow case below is a tail call: the hot paths that inline this need no stack frame.
VT_HOT void account(const live::Value& e, int64_t sign) {
  const int64_t delta = sign * int64_t(e.size);
  // Per call site, for `top`. No stack (0) or one beyond the tracked ids is nobody's row (the
  // summary reads ids 1 and up): not counted, so threads without stacks write no shared line here.
  if (e.bucket == kLiveDevice && e.stack - 1u < kTrackedStacks - 1u) {
    std::atomic<int64_t>* s = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
    if (__builtin_expect(!s, 0)) return account_mapping_sites(e.stack, e.row, e.bucket, delta);
    s[e.stack].fetch_add(delta, std::memory_order_relaxed);
  }
  live::add_bytes(e.row, e.bucket, delta, sign > 0);  // live_counters.h: per thread once two allocate
}

VT_HOT void add(uint64_t key, uint8_t space, const live::Value& v) {
  live::Value old;
  bool had_old = false;
  if (!map_of(space).insert(key, v, &old, &had_old)) return;  // out of memory: this allocation goes uncounted
  if (had_old) account(old, -1);  // before the new one: no peak made of both
  account(v, +1);
}

VT_HOT void remove(uint64_t key, uint8_t space) {
  live::Value old;
  if (map_of(space).erase(key, &old)) account(old, -1);
}

// The address map's hot paths (every allocation and free): one try, then out of line the whole
// way. The Value goes out of line as its fields (in registers, not on a stack frame).
__attribute__((noinline)) void add_address_slow(uint64_t key, uint64_t size, uint64_t context, uint32_t stack,
                                                uint8_t row_, uint8_t bucket) {
  add(key, kAddress, {size, context, stack, row_, bucket});
}
// A Value's stack, row and bucket in one register (the out-of-line calls stay within the six
// argument registers).
VT_HOT uint64_t pack(const live::Value& v) { return v.stack | uint64_t(v.row) << 32 | uint64_t(v.bucket) << 40; }
VT_HOT live::Value unpack(uint64_t size, uint64_t context, uint64_t p) {
  return {size, context, uint32_t(p), uint8_t(p >> 32), uint8_t(p >> 40)};
}
__attribute__((noinline)) void replaced_address(uint64_t size, uint64_t context, uint64_t packed, uint64_t old_size,
                                                uint64_t old_packed) {
  account(unpack(old_size, 0, old_packed), -1);  // a free we never saw: before the new one
  account(unpack(size, context, packed), +1);
}
__attribute__((noinline)) void remove_address_slow(uint64_t key) { remove(key, kAddress); }

// Rule 6: every address-keyed allocation of the context, taken out in batches and accounted.
void drop_context(uint64_t ctx) {
  live::Value dropped[64];
  int n;
  do {
    n = g_addresses.erase_context(ctx, dropped, 64);
    for (int i = 0; i < n; ++i) account(dropped[i], -1);
  } while (n == 64);
}

// ---- pools (rule 4): where each pool created in this run lives ----

// Slots are written under g_pools_lock (creates and destroys are rare) and read without it by
// every cuMemAllocFromPoolAsync: `pool` is stored last (release), so a reader that finds its
// pool also finds where it lives.
struct PoolSlot {
  std::atomic<uint64_t> pool{0};   // 0: free
  std::atomic<uint64_t> where{0};  // uint32 device | bucket << 32
};
PoolSlot g_pools[kTrackedPools];
std::atomic<int> g_pool_slots{0};  // slots ever used
std::atomic_flag g_pools_lock = ATOMIC_FLAG_INIT;

// The current pools of device locations (rule 4): written under g_pools_lock, read without it
// by every cuMemAllocAsync (one load while none was ever set). A slot whose pool is 0 is free.
constexpr int kCurrentPools = 64;
struct CurrentSlot {
  std::atomic<uint64_t> location{0};
  std::atomic<uint64_t> pool{0};
};
CurrentSlot g_current[kCurrentPools];
std::atomic<int> g_current_slots{0};  // slots ever used

// Under g_pools_lock.
void forget_current_locked(uint64_t pool) {
  const int n = g_current_slots.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (g_current[i].pool.load(std::memory_order_relaxed) == pool) g_current[i].pool.store(0, std::memory_order_release);
}

void current_pool_set(uint64_t location, uint64_t pool) {
  Guard g(g_pools_lock);
  const int n = g_current_slots.load(std::memory_order_relaxed);
  int slot = -1;
  for (int i = 0; i < n; ++i) {
    if (g_current[i].location.load(std::memory_order_relaxed) == location) {
      slot = i;
      break;
    }
    if (slot < 0 && g_current[i].pool.load(std::memory_order_relaxed) == 0) slot = i;
  }
  if (slot < 0) {
    if (n == kCurrentPools) return;  // its allocations count as the default pool's
    slot = n;
    g_current_slots.store(n + 1, std::memory_order_release);
  }
  g_current[slot].pool.store(0, std::memory_order_relaxed);
  g_current[slot].location.store(location, std::memory_order_relaxed);
  g_current[slot].pool.store(pool, std::memory_order_release);
}

VT_HOT uint64_t current_pool(uint64_t location) {
  const int n = g_current_slots.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const uint64_t p = g_current[i].pool.load(std::memory_order_acquire);
    if (p && g_current[i].location.load(std::memory_order_relaxed) == location) return p;
  }
  return 0;
}

enum class Placing { Create, Place, Current };
// A pool created, or named at a location (Place; Current: made current there, where a pool
// already placed keeps its location: rule 4).
void pool_created(uint64_t pool, Placement at, Placing how) {
  if (!is_memory_key(pool)) return;
  const bool keep = how == Placing::Current;
  Guard g(g_pools_lock);
  if (how == Placing::Create) forget_current_locked(pool);  // rule 3: a new pool is current nowhere
  int n = g_pool_slots.load(std::memory_order_relaxed);
  int slot = -1;
  for (int i = 0; i < n; ++i) {
    uint64_t p = g_pools[i].pool.load(std::memory_order_relaxed);
    if (p == pool) {  // created again without a destroy we saw (rule 3): placed anew
      if (keep) return;
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
  g_pools[slot].pool.store(0, std::memory_order_relaxed);
  g_pools[slot].where.store(uint32_t(at.device) | uint64_t(at.bucket) << 32, std::memory_order_relaxed);
  g_pools[slot].pool.store(pool, std::memory_order_release);
}

void pool_destroyed(uint64_t pool) {
  if (!is_memory_key(pool)) return;
  Guard g(g_pools_lock);
  forget_current_locked(pool);  // the default pool is current again
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

}  // namespace

int tracked_device_pools(int32_t device, uint64_t* out, int max) {
  int found = 0;
  const int n = g_pool_slots.load(std::memory_order_acquire);
  for (int i = 0; i < n && found < max; ++i) {
    const uint64_t pool = g_pools[i].pool.load(std::memory_order_acquire);
    const uint64_t w = g_pools[i].where.load(std::memory_order_relaxed);
    if (pool && int32_t(uint32_t(w)) == device && Bucket(w >> 32) == Bucket::Device) out[found++] = pool;
  }
  return found;
}

namespace {

// ---- VMM mappings and handle release (rule 5), under one spinlock ----

struct Mapping {
  uint64_t va, size, handle;
};
struct HandleUse {  // a handle with mappings or retained references (rules 5 and 11)
  uint64_t handle;  // 0: empty slot
  uint32_t mappings;
  HandleRefs refs;
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
  MmapVec<McBinding> binds;  // multicast bindings (rule 12), in no order
  // Handles in use, open addressing with backward-shift deletion (no tombstones: VMM churn never
  // degrades it). Load at most 1/2. Handle 0 is no memory (rule 2) and never stored.
  HandleUse* use = nullptr;
  size_t use_cap = 0, use_n = 0;

  HandleUse* find(uint64_t h) {
    if (!use_cap || !h) return nullptr;
    for (size_t j = mix(h) & (use_cap - 1);; j = (j + 1) & (use_cap - 1)) {
      if (use[j].handle == h) return &use[j];
      if (use[j].handle == 0) return nullptr;
    }
  }
  HandleUse* get(uint64_t h) {  // inserting {h, 0, 0} when absent; nullptr when out of memory
    if (!h) return nullptr;
    if (HandleUse* u = find(h)) return u;
    if ((use_n + 1) * 2 > use_cap && !rehash(use_cap ? use_cap * 2 : 256)) return nullptr;
    size_t j = mix(h) & (use_cap - 1);
    while (use[j].handle) j = (j + 1) & (use_cap - 1);
    use[j] = {h, 0, HandleRefs{}};
    ++use_n;
    return &use[j];
  }
  void drop(HandleUse* u) {
    size_t i = size_t(u - use);
    use[i].handle = 0;
    --use_n;
    for (size_t j = (i + 1) & (use_cap - 1); use[j].handle; j = (j + 1) & (use_cap - 1)) {
      size_t home = mix(use[j].handle) & (use_cap - 1);
      // Move j back into the hole at i unless its home lies cyclically in (i, j].
      bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!stays) {
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
      if (maps.p[mid].va < va)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  uint64_t mapped_at(uint64_t va) const {  // the handle mapped at va, 0 when none
    size_t i = lower_bound(va);
    if (i < maps.n && maps.p[i].va == va) return maps.p[i].handle;
    if (i == 0) return 0;
    const Mapping& m = maps.p[i - 1];
    return va - m.va < m.size ? m.handle : 0;
  }
  void clear() {
    maps.clear();
    binds.clear();
    if (use) munmap(use, use_cap * sizeof(HandleUse));
    use = nullptr;
    use_cap = use_n = 0;
  }
};
Vmm g_vmm;

// After a handle lost a mapping or a reference: drops its use entry once it has neither mappings
// nor retained references (unmapped, not retained and not released is the same as no entry).
// True when the handle is then freed.
bool settle(HandleUse* u) {
  if (u->mappings > 0 || u->refs.held()) return false;
  bool freed = handle_freed(u->refs.released, 0);
  g_vmm.drop(u);
  return freed;
}

// Removes the mappings starting in [va, va + size); the handles this frees go to `freed` (at most
// `cap`; the caller comes back for the rest). Returns how many. Under g_vmm.lock.
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

// Rule 12: a binding of a handle's memory went; true when that freed it. Under g_vmm.lock.
bool unbound_locked(uint64_t handle) {
  HandleUse* u = g_vmm.find(handle);
  if (!u || u->refs.bindings == 0) return false;
  u->refs.bindings--;
  return settle(u);
}

// A handle freed: its memory goes, and when it was a multicast object its bindings with it
// (rule 12), which may free the memory they held.
void handle_gone(uint64_t handle) {
  uint64_t work[64];
  size_t n = 0;
  work[n++] = handle;
  while (n) {
    const uint64_t h = work[--n];
    remove(h, kHandle);
    Guard g(g_vmm.lock);
    MmapVec<McBinding>& b = g_vmm.binds;
    size_t kept = 0;
    for (size_t i = 0; i < b.n; ++i) {
      if (b.p[i].mc != h)
        b.p[kept++] = b.p[i];
      else if (unbound_locked(b.p[i].handle) && n < 64)
        work[n++] = b.p[i].handle;
    }
    b.n = kept;
  }
}

// Removes the binding at index i (the caller holds g_vmm.lock); returns its handle when that freed it.
uint64_t erase_binding_locked(size_t i) {
  MmapVec<McBinding>& b = g_vmm.binds;
  const uint64_t h = b.p[i].handle;
  b.p[i] = b.p[b.n - 1];
  b.n--;
  return unbound_locked(h) ? h : 0;
}

void mc_bind(const Event& e) {
  uint64_t freed = 0, handle;
  McBinding nb;
  {
    Guard g(g_vmm.lock);
    handle = binds_by_address(e.op) ? g_vmm.mapped_at(e.addr) : bound_handle(e.op, e);
    nb = binding_of(e.op, e, handle);
    for (size_t i = 0; i < g_vmm.binds.n; ++i)
      if (same_binding(g_vmm.binds.p[i], nb)) {  // rule 3: the old binding is gone
        freed = erase_binding_locked(i);
        break;
      }
  }
  if (freed) handle_gone(freed);
  if (!is_memory_key(handle)) return;
  Guard g(g_vmm.lock);
  if (!g_vmm.binds.reserve_one()) return;  // out of memory: the binding holds nothing
  if (HandleUse* u = g_vmm.get(handle)) {
    g_vmm.binds.p[g_vmm.binds.n++] = nb;
    u->refs.bindings++;
  }
}

void mc_unbind(const Event& e) {
  uint64_t freed = 0;
  {
    Guard g(g_vmm.lock);
    for (size_t i = 0; i < g_vmm.binds.n; ++i)
      if (unbind_removes(g_vmm.binds.p[i], e)) {
        freed = erase_binding_locked(i);
        break;
      }
  }
  if (freed) handle_gone(freed);
}

void vmm_unmap(uint64_t va, uint64_t size) {
  uint64_t freed[64];
  size_t k;
  do {
    {
      Guard g(g_vmm.lock);
      k = unmap_locked(va, size, freed, 64);
    }
    for (size_t i = 0; i < k; ++i) handle_gone(freed[i]);
  } while (k == 64);
}

void vmm_map(uint64_t va, uint64_t size, uint64_t handle) {
  uint64_t freed[1];
  size_t k = 0;
  {
    Guard g(g_vmm.lock);
    size_t i = g_vmm.lower_bound(va);
    if (i < g_vmm.maps.n && g_vmm.maps.p[i].va == va) k = unmap_locked(va, 1, freed, 1);  // rule 3
    // A mapping of handle 0 (no memory: rule 2) is kept too, as the analyzer keeps it: it is
    // what a cuMulticastBindAddr of its address finds (rule 12).
    HandleUse* u = g_vmm.maps.reserve_one() ? g_vmm.get(handle) : nullptr;
    if (u || (handle == 0 && g_vmm.maps.n < g_vmm.maps.cap)) {
      MmapVec<Mapping>& m = g_vmm.maps;
      i = g_vmm.lower_bound(va);
      memmove(m.p + i + 1, m.p + i, (m.n - i) * sizeof(Mapping));
      m.p[i] = {va, size, handle};
      m.n++;
      if (u) u->mappings++;
    }
  }
  if (k) handle_gone(freed[0]);
}

void vmm_release(uint64_t handle) {
  {
    Guard g(g_vmm.lock);
    HandleUse* u = g_vmm.find(handle);
    if (u) {
      u->refs.release();  // rule 11: a retained reference may remain
      if (!settle(u)) return;  // still mapped, retained or bound: freed later
    }
  }
  handle_gone(handle);
}

void vmm_retained(uint64_t handle) {  // rule 11
  Guard g(g_vmm.lock);
  if (HandleUse* u = g_vmm.get(handle)) u->refs.retains++;
}

void vmm_created(uint64_t handle) {  // rule 3: a new handle has one reference, whatever came before
  Guard g(g_vmm.lock);
  if (HandleUse* u = g_vmm.find(handle)) u->refs.renew();
}

// Rule 10: a mapping of an imported handle tells its size. Imports are rare: until one is seen,
// a mapping costs one relaxed load here.
std::atomic<bool> g_imports_seen{false};
void import_mapped(const Event& map) {
  live::Value v;
  if (!g_handles.erase(map.aux, &v)) return;
  const uint64_t size = v.bucket == uint8_t(Bucket::Imported) ? import_size_after_map(v.size, map) : v.size;
  if (size != v.size) {
    account(v, -1);
    v.size = size;
    account(v, +1);
  }
  live::Value old;
  bool had_old = false;
  if (!g_handles.insert(map.aux, v, &old, &had_old)) account(v, -1);  // out of memory: uncounted
  else if (had_old) account(old, -1);  // (a handle made again meanwhile, without a release we saw)
}

// ---- the graph pool (format/accounting.h, rule 9) ----
// Its samples are absolute figures, one per device, not allocations: the device's row moves by
// the difference from that device's last sample. Devices 0..63 apart; the others (and -1) share
// the last figure.
constexpr int kGraphDevices = 64;
std::atomic<int64_t> g_graph_reserved[kGraphDevices + 1];

void graph_pool_sampled(int32_t device, uint64_t reserved) {
  const int r = row(device);
  std::atomic<int64_t>& last = g_graph_reserved[device >= 0 && device < kGraphDevices ? device : kGraphDevices];
  const int64_t delta = int64_t(reserved) - last.exchange(int64_t(reserved), std::memory_order_relaxed);
  live::add_bytes(r, kLiveDevice, delta);
}

// Everything but address-keyed allocations and frees (VMM, pools, teardowns): rare, out of line.
__attribute__((noinline)) void track_other(const Event& e, Effect effect) {
  switch (effect) {
    case Effect::CreateHandle: {
      if (!is_memory_key(e.aux)) return;
      Placement at = placement_at(e.aux2, e.device);
      vmm_created(e.aux);
      add(e.aux, kHandle, {e.size, 0, e.stack, uint8_t(row(at.device)), uint8_t(at.bucket)});
      return;
    }
    case Effect::ImportHandle: {  // rule 10: imported, its size known at its mappings
      if (!is_memory_key(e.aux)) return;
      Placement at = placement_at(e.aux2, e.device);
      vmm_created(e.aux);
      g_imports_seen.store(true, std::memory_order_relaxed);
      add(e.aux, kHandle, {0, 0, e.stack, uint8_t(row(at.device)), uint8_t(Bucket::Imported)});
      return;
    }
    case Effect::RetainHandle:
      if (is_memory_key(e.aux)) vmm_retained(e.aux);
      return;
    case Effect::ReleaseHandle:
      if (is_memory_key(e.aux)) vmm_release(e.aux);
      return;
    case Effect::Map:
      vmm_map(e.addr, e.size, e.aux);  // handle 0: only rule 3's unmap
      if (g_imports_seen.load(std::memory_order_relaxed) && is_memory_key(e.aux)) import_mapped(e);
      return;
    case Effect::Unmap: vmm_unmap(e.addr, e.size); return;
    case Effect::CreatePool: pool_created(e.aux, placement_at(e.aux2, e.device), Placing::Create); return;
    case Effect::PlacePool: pool_created(e.aux, placement_at(e.aux2, e.device), Placing::Place); return;
    case Effect::CurrentPool:
      if (!is_memory_key(e.aux)) return;
      if ((e.fields & format::kEvAux2) && is_device_pool_location(e.aux2)) current_pool_set(e.aux2, e.aux);
      pool_created(e.aux, placement_at(e.aux2, e.device), Placing::Current);
      return;
    case Effect::DestroyPool: pool_destroyed(e.aux); return;
    case Effect::Teardown:
      if (uint64_t ctx = torn_down_context(e.op, e)) drop_context(ctx);
      return;
    case Effect::GraphPool:
      if (has_graph_pool_sample(e)) graph_pool_sampled(graph_pool_device(e.op, e), e.size);
      return;
    case Effect::Bind: mc_bind(e); return;  // rule 12: a binding holds the memory bound
    case Effect::Unbind: mc_unbind(e); return;
    case Effect::CreateMulticast:  // rule 12: no memory; the analyzer keeps the objects
    case Effect::AddDevice:
    case Effect::Export:  // rule 13: no memory
    case Effect::GraphNode:  // rule 8: no memory
    case Effect::Allocate:  // track_event's
    case Effect::Free:
    case Effect::Reserve:  // rule 7: no memory of their own
    case Effect::Unreserve:
    case Effect::TrimPool:
    case Effect::Code:  // rule 14: contexts and code are the report's figure, not live memory
    case Effect::CodeRelease:
    case Effect::PoolAttribute:  // rule 15: footprints are the analyzer's (pools hold no memory: rule 7)
    case Effect::None: return;
  }
}


template <int... I>
constexpr auto hot_table(std::integer_sequence<int, I...>) {
  return std::array<HotOp, sizeof...(I)>{hot_op(kOps[I])...};
}
constexpr auto kHot = hot_table(std::make_integer_sequence<int, kHookCount>{});

}  // namespace

// Each its own function, called from the inlined hot paths: neither pays for the other's registers.
void track_address_added(uint64_t key, uint64_t size, uint64_t context, uint32_t stack, uint8_t row_, uint8_t bucket) {
  const live::Value v{size, context, stack, row_, bucket};
  live::Value old;
  bool had_old = false;
  if (__builtin_expect(g_addresses.try_insert(key, v, &old, &had_old) != live::Map::Try::kDone, 0))
    return add_address_slow(key, v.size, v.context, v.stack, v.row, v.bucket);
  if (__builtin_expect(had_old, 0))
    return replaced_address(v.size, v.context, pack(v), old.size, pack(old));
  account(v, +1);
}

void track_address_removed(uint64_t key) {
  live::Value old;
  const live::Map::Try r = g_addresses.try_erase(key, &old);
  if (__builtin_expect(r == live::Map::Try::kDone, 1)) return account(old, -1);
  if (r == live::Map::Try::kSlow) return remove_address_slow(key);
}

void track_pool_allocation(const PoolAllocation& a) {
  live::Value v{a.size, a.context, a.stack, uint8_t(row(a.device)), a.bucket};
  Placement pool;
  if (uint64_t p = allocation_pool(a, [](uint64_t at) { return current_pool(at); }); p && pool_placement(p, &pool)) {
    Placement at = from_pool(pool, a.device);
    v.row = uint8_t(row(at.device));
    v.bucket = uint8_t(at.bucket);
  }
  track_address_added(a.addr, v.size, v.context, v.stack, v.row, v.bucket);
}

void track_event(const Event& e) {
  if (!changes_memory(e.result)) return;  // rule 1
  const HotOp h = kHot[int(e.op)];
  switch (h.hot) {
    case Hot::kFreeAsync:
      if (captured_async(e)) return;
      [[fallthrough]];
    case Hot::kFree:
      if (is_memory_key(e.addr)) track_address_removed(e.addr);
      return;
    case Hot::kAllocateAsync:
      if (captured_async(e) || !is_memory_key(e.addr)) break;
      return track_pool_allocation(pool_allocation(e, h.bucket));
    case Hot::kAllocate:
      if (is_memory_key(e.addr))
        track_address_added(e.addr, e.size, e.context, e.stack, uint8_t(row(e.device)), h.bucket);
      return;
    case Hot::kOther: break;
  }
  const OpInfo& op = kOps[int(e.op)];
  const Effect effect = effect_of(op, e);
  if (effect != Effect::Allocate && effect != Effect::Free) track_other(e, effect);
}

int64_t live_bytes(int device, int bucket) {
  if (bucket < 0 || bucket >= kBuckets) return -1;
  if (device >= 0) return live::bytes(row(device), bucket);
  int64_t sum = 0;  // -1: all devices
  for (int r = 0; r < live::kRows; ++r) sum += live::bytes(r, bucket);
  return sum;
}

int64_t peak_bytes(int device) {
  if (device >= 0) return live::peak(row(device));
  int64_t best = 0;  // -1: the highest of all rows
  for (int r = 0; r < live::kRows; ++r) best = std::max(best, live::peak(r));
  return best;
}

void reset_peak(int device) { live::reset_peak(device < 0 ? -1 : row(device)); }

int64_t site_bytes(uint32_t stack) {
  std::atomic<int64_t>* s = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
  return s && stack < kTrackedStacks ? s[stack].load(std::memory_order_relaxed) : 0;
}

void forget_live_state() {
  // The child's trace starts empty; so does what it reports as live. Called in the child right
  // after fork, with one thread: the locks another thread of the parent held are cleared.
  live::forget_threads_in_child();
  g_addresses.reset_in_child();
  g_handles.reset_in_child();
  g_vmm.lock.clear();
  g_vmm.clear();
  g_pools_lock.clear();
  for (PoolSlot& p : g_pools)
    if (p.pool.load(std::memory_order_relaxed)) p.pool.store(0);
  g_pool_slots.store(0);
  for (CurrentSlot& c : g_current)
    if (c.pool.load(std::memory_order_relaxed)) c.pool.store(0);
  g_current_slots.store(0);
  g_imports_seen.store(false);
  live::forget_in_child();
  for (auto& g : g_graph_reserved)
    if (g.load(std::memory_order_relaxed)) g.store(0);
  std::atomic<int64_t>* s = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
  // (zeroed by the kernel: its own mapping; storing to each copied 512 KiB into every forked child)
  if (s && madvise(s, kTrackedStacks * sizeof *s, MADV_DONTNEED) != 0)
    for (uint32_t i = 0; i < kTrackedStacks; ++i) s[i].store(0);
}

}  // namespace vt
