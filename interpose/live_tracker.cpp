// See live_tracker.h.
#include "live_tracker.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>

namespace vt {

namespace {

struct Entry {
  uint64_t key;  // address or handle; 0 = empty, 1 = deleted
  uint64_t size;
  uint64_t context;
  uint32_t stack;
  int16_t device;
  uint8_t bucket;
};

// One shard: an open-addressing table in mmap'ed memory, grown (rehashed) under its lock.
struct Shard {
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  Entry* slots = nullptr;
  uint64_t cap = 0, used = 0;
};
constexpr int kShards = 64;
Shard g_shards[kShards];

std::atomic<int64_t> g_live[kTrackedDevices + 1][kBuckets];  // last row: unknown device
std::atomic<int64_t> g_peak[kTrackedDevices + 1];
std::atomic<int64_t>* g_sites = nullptr;  // kTrackedStacks counters, mmap'ed on first use

struct Guard {
  Shard& s;
  explicit Guard(Shard& sh) : s(sh) {
    while (s.lock.test_and_set(std::memory_order_acquire)) __builtin_ia32_pause();
  }
  ~Guard() { s.lock.clear(std::memory_order_release); }
};

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}
Shard& shard_of(uint64_t key) { return g_shards[mix(key) % kShards]; }

bool grow(Shard& s) {
  uint64_t cap = s.cap ? s.cap * 2 : 1024;
  void* m = mmap(nullptr, cap * sizeof(Entry), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  Entry* fresh = static_cast<Entry*>(m);
  uint64_t used = 0;
  for (uint64_t i = 0; i < s.cap; ++i) {
    const Entry& e = s.slots[i];
    if (e.key <= 1) continue;
    uint64_t j = mix(e.key) & (cap - 1);
    while (fresh[j].key) j = (j + 1) & (cap - 1);
    fresh[j] = e;
    ++used;
  }
  if (s.slots) munmap(s.slots, s.cap * sizeof(Entry));
  s.slots = fresh;
  s.cap = cap;
  s.used = used;
  return true;
}

// Inserts e; when the key was already live (a free we never saw), *replaced gets the old entry.
bool insert(const Entry& e, Entry* replaced, bool* had_old) {
  Shard& s = shard_of(e.key);
  Guard g(s);
  *had_old = false;
  if ((s.used + 1) * 4 > s.cap * 3 && !grow(s)) return false;
  uint64_t j = mix(e.key) & (s.cap - 1), free_slot = ~0ull;
  for (; s.slots[j].key; j = (j + 1) & (s.cap - 1)) {
    if (s.slots[j].key == e.key) {
      *replaced = s.slots[j];
      *had_old = true;
      s.slots[j] = e;
      return true;
    }
    if (s.slots[j].key == 1 && free_slot == ~0ull) free_slot = j;
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
  Guard g(s);
  if (!s.cap) return false;
  uint64_t j = mix(key) & (s.cap - 1);
  for (uint64_t n = 0; n < s.cap && s.slots[j].key; ++n, j = (j + 1) & (s.cap - 1)) {
    if (s.slots[j].key == key) {
      *out = s.slots[j];
      s.slots[j].key = 1;  // tombstone
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
      void* m = mmap(nullptr, kTrackedStacks * sizeof(std::atomic<int64_t>), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      std::atomic<int64_t>* expected = nullptr;
      if (m != MAP_FAILED && !__atomic_compare_exchange_n(&g_sites, &expected, static_cast<std::atomic<int64_t>*>(m),
                                                          false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        munmap(m, kTrackedStacks * sizeof(std::atomic<int64_t>));
    }
    std::atomic<int64_t>* sites = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
    if (sites) sites[e.stack < kTrackedStacks ? e.stack : 0].fetch_add(sign * int64_t(e.size), std::memory_order_relaxed);
  }
}


void drop_context(uint64_t ctx) {
  for (Shard& s : g_shards) {
    Entry dropped[64];
    int n;
    do {  // collect under the lock, account outside it
      n = 0;
      {
        Guard g(s);
        for (uint64_t i = 0; i < s.cap && n < 64; ++i)
          if (s.slots[i].key > 1 && s.slots[i].context == ctx) {
            dropped[n++] = s.slots[i];
            s.slots[i].key = 1;
          }
      }
      for (int i = 0; i < n; ++i) account(dropped[i], -1);
    } while (n == 64);
  }
}

}  // namespace

void track_event(const Event& e) {
  if (e.result != 0) return;
  const OpInfo& op = kOps[int(e.op)];
  Entry en{};
  en.size = e.size;
  en.context = e.context;
  en.stack = e.stack;
  en.device = int16_t(e.device);
  en.bucket = uint8_t(bucket_of(op.kind));
  if (keyed_by_address(op.kind)) {
    en.key = e.addr;
  } else switch (op.kind) {
    case MemKind::VmmPhysical:
      en.key = e.aux | (1ull << 63);  // handles and addresses never collide
      if (uint32_t(e.aux2 >> 32) == 1)
        en.device = int16_t(uint32_t(e.aux2));
      else
        en.bucket = uint8_t(Bucket::PinnedHost);
      break;
    case MemKind::Context: {
      uint64_t ctx = e.op == HookId::cuCtxDestroy_v2 ? e.aux : e.aux2;
      if (ctx) drop_context(ctx);
      return;
    }
    default: return;  // pools, mappings and reservations hold no memory of their own
  }
  if (en.key <= 1) return;
  if (op.action == Action::Acquire) {
    Entry old;
    bool had_old = false;
    if (insert(en, &old, &had_old)) {
      if (had_old) account(old, -1);
      account(en, +1);
    }
  } else {
    Entry old;
    if (erase(en.key, &old)) account(old, -1);
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
  for (auto& r : g_live)
    for (auto& b : r) b.store(0);
  for (auto& p : g_peak) p.store(0);
  std::atomic<int64_t>* sites = __atomic_load_n(&g_sites, __ATOMIC_ACQUIRE);
  if (sites)
    for (uint32_t i = 0; i < kTrackedStacks; ++i) sites[i].store(0);
}

}  // namespace vt
