// The live tracker's map from a key (an address, or a VMM handle in a table of its own) to what
// is live there, lock-free on the hook path. Owns the tables, their growth and the per-thread
// announcement records that make growing safe; knows nothing of the accounting rules
// (live_tracker.cpp applies them).
//
// Why lock-free: the tracker sits on every allocation and free of every thread. A spinlock per
// event made 8 threads on 2 cores convoy behind a holder the scheduler had preempted (issue 16:
// 259 ns median per event with 8 threads, 89-134 ns with one), and the table grew while the lock
// was held.
//
// How: open addressing with linear probing. A slot's key is written once (CAS from 0) and stays
// for the table's life, so probe chains never break; the slot's state says whether the key is
// live (kLive), gone (kGone: a tombstone the same key reuses) or being written (kBusy, held only
// for a few stores by the thread that won the CAS on the state). The fields are written before
// kLive is stored with release, and read after kLive is taken with acquire.
// Growing (and purging tombstones) is the one blocking step, and rare: the thread that finds the
// table too full freezes it, waits until no thread is inside it (each thread announces the table
// it works in, in a cache line of its own: no shared line is written per event), copies the live
// entries into a fresh table, publishes it and unmaps the old one once no announcement names it
// (hazard-pointer style: a thread re-reads the current table after announcing, so it never
// touches a table it did not see current). Threads meeting a frozen table wait for the new one.
// The announcement needs a full fence between its store and the re-read: on every event that was
// an xchg, ~16 ns of the hook's ~170 per event here (bench/run_vs_heaptrack.sh). Where the kernel
// offers membarrier's private expedited command (Linux 4.14+, not refused by seccomp), the fence
// is asymmetric instead: the announcement is a plain store, and the rare grower runs a barrier on
// every core running one of our threads before it reads the announcements (the scheme of
// liburcu's and folly's asymmetric fences). Elsewhere the xchg stays.
// Memory comes from mmap, never malloc: the hook may run inside the program's malloc.
#pragma once

#include <atomic>
#include <cstdint>

namespace vt::live {

struct Value {
  uint64_t size;
  uint64_t context;  // the allocating context (accounting rule 6); 0 for handles
  uint32_t stack;
  uint8_t row;  // the counters' row of its device
  uint8_t bucket;
};

namespace detail {

enum : uint8_t { kFree = 0, kLive = 1, kGone = 2, kBusy = 3 };

struct Slot {
  std::atomic<uint64_t> key;  // 0: never used; once set, kept for the table's life
  uint64_t size, context;
  uint32_t stack;
  uint8_t row, bucket;
  std::atomic<uint8_t> state;
};
static_assert(sizeof(Slot) == 32);

struct Table {
  uint64_t cap;                   // a power of two
  uint32_t shift;                 // 64 - log2(cap): a key's home slot is its hash's top bits
  std::atomic<uint64_t> claimed;  // slots with a key (live and tombstones), up to kClaimBatch - 1 per thread behind
  std::atomic<bool> frozen;       // a thread is growing it: nobody else enters
  std::atomic<bool> grow_failed;  // no memory for a bigger table: fill this one to the last slot
  alignas(64) Slot slots[1];      // cap of them
};

struct alignas(64) Announce {
  std::atomic<Table*> in{nullptr};    // the table this thread is working in
  std::atomic<int> owned{0};          // a live thread holds this record
  Announce* next = nullptr;           // records are never freed: the list is walked without a lock
  const Table* claims_for = nullptr;  // the claims this thread has not yet added to a table's count
  uint32_t claims = 0;
};

extern __thread Announce* t_announce __attribute__((tls_model("initial-exec")));
// The same record for the inline hot paths, set only while announcements are plain stores: with
// the xchg fences it stays null and those paths go out of line (so the mode costs them nothing).
extern __thread Announce* t_light_announce __attribute__((tls_model("initial-exec")));

// Decided once, before the first table is published, and never changed while threads use a
// table: announcements are plain stores, the growers' heavy_barrier() fencing them (true), or
// xchg fences of their own (false).
extern std::atomic<bool> g_light_announce;

}  // namespace detail

// One map. Every operation is lock-free except when it has to wait for a growth in progress.
// The hot paths (insert and erase of a key) are inline: the tracker calls them on every event.
class Map {
 public:
  // Sets `key` live with `v`. When it was live already (a free we never saw), *old gets what was
  // there and *had_old is set. False when memory for the table could not be had (the caller
  // counts nothing).
  inline bool insert(uint64_t key, const Value& v, Value* old, bool* had_old);
  // Takes `key` out; false when it was not live.
  inline bool erase(uint64_t key, Value* out);
  // Takes out up to `cap` live entries whose context is `ctx`, into out[]; returns how many (the
  // caller comes back while it gets `cap`).
  int erase_context(uint64_t ctx, Value* out, int cap);
  // Entries live now (approximate while other threads change the map).
  uint64_t live();
  // After fork, in the child (one thread): empty, and nothing announced.
  void reset_in_child();

  std::atomic<detail::Table*> current{nullptr};
  std::atomic<detail::Table*> spare{nullptr};  // the last table given up, kept for the next growth of that size

  // One try with no call in it (so a caller's own hot path needs no stack frame): kDone (done:
  // *had_old / *out as above), kAbsent (erase: the key is not live), kSlow (nothing was done:
  // a thread's first use, a growth, a new key, a slot being written, announcements that fence
  // themselves; insert/erase do it all).
  enum class Try : uint8_t { kDone, kAbsent, kSlow };
  inline Try try_insert(uint64_t key, const Value& v, Value* old, bool* had_old);
  inline Try try_erase(uint64_t key, Value* out);

 private:
  bool insert_any(uint64_t key, const Value& v, Value* old, bool* had_old);  // every case (out of line)
  bool erase_any(uint64_t key, Value* out);
  inline detail::Table* try_enter(detail::Announce* a);
  detail::Table* enter(detail::Announce* a);
  detail::Table* enter_slow(detail::Announce* a);
  bool insert_slow(detail::Announce* a, uint64_t key, const Value& v, Value* old, bool* had_old);
  void grow(detail::Table* t);
};

// After fork, in the child: every thread's announcement is cleared (those threads are gone).
void forget_threads_in_child();
// Chooses how threads announce (g_light_announce), once: at load, else before the first table.
void choose_announcement();
// Sets the mode, and the calling thread's t_light_announce to match. Only while no other thread
// is inside a table (a fork child; tests between their cases).
void use_light_announcements(bool light);

namespace detail {

Announce* take_announce();
void wait_busy(Slot& s);
enum class Put { kDone, kGrow };
Put put_new(Table* t, Announce* a, uint64_t j, uint64_t key, const Value& v, Value* old, bool* had_old);

// A key's first slot: multiplicative (Fibonacci) hashing, the product's top bits. Addresses are
// aligned and often strided; the multiply spreads every bit of the key into the top ones.
inline uint64_t home(const Table* t, uint64_t key) { return (key * 0x9e3779b97f4a7c15ull) >> t->shift; }
inline Announce* announce() {
  Announce* a = t_announce;
  return __builtin_expect(a != nullptr, 1) ? a : take_announce();
}
inline Value read(const Slot& s) { return {s.size, s.context, s.stack, s.row, s.bucket}; }
inline void write(Slot& s, const Value& v) {
  s.size = v.size, s.context = v.context, s.stack = v.stack, s.row = v.row, s.bucket = v.bucket;
}
// Takes the slot from kLive (or, with `any`, from kFree or kGone too) to kBusy; returns the state
// it had, or kBusy when it was not one of those.
inline uint8_t take(Slot& s, bool any) {
  for (;;) {
    uint8_t st = s.state.load(std::memory_order_relaxed);
    if (__builtin_expect(st == kBusy, 0)) {
      wait_busy(s);
      continue;
    }
    if (st != kLive && !any) return kBusy;
    if (s.state.compare_exchange_weak(st, kBusy, std::memory_order_acquire, std::memory_order_relaxed)) return st;
  }
}

}  // namespace detail

// Announces the current table and returns it, or nullptr when there is none yet or it is being
// grown (nothing announced then). No call: the hot paths stay frameless. Only with plain-store
// announcements (a thread's t_light_announce).
inline detail::Table* Map::try_enter(detail::Announce* a) {
  detail::Table* t = current.load(std::memory_order_acquire);
  if (__builtin_expect(t == nullptr, 0)) return nullptr;
  a->in.store(t, std::memory_order_relaxed);            // the grower's barrier fences it
  std::atomic_signal_fence(std::memory_order_seq_cst);  // (and the compiler keeps the order)
  // Re-read after announcing: a grower that unmaps t waits for announcements made before it
  // published the new table, and one made after sees the new table here.
  if (__builtin_expect(current.load(std::memory_order_seq_cst) == t && !t->frozen.load(std::memory_order_seq_cst), 1))
    return t;
  a->in.store(nullptr, std::memory_order_release);
  return nullptr;
}

inline detail::Table* Map::enter(detail::Announce* a) { return enter_slow(a); }

// The hot paths try once, with no call in them (so they need no stack frame): the key's slot
// found at once, and not being written. Anything else (a thread's first use, a table being
// grown, a new key, a slot another thread holds) goes the whole way, out of line.
inline Map::Try Map::try_insert(uint64_t key, const Value& v, Value* old, bool* had_old) {
  using namespace detail;
  Announce* a = t_light_announce;
  if (__builtin_expect(!a, 0)) return Try::kSlow;
  Try r = Try::kSlow;
  if (Table* t = try_enter(a)) {
    const uint64_t cap = t->cap, mask = cap - 1;
    for (uint64_t j = home(t, key), n = 0; n < cap; ++n, j = (j + 1) & mask) {
      Slot& s = t->slots[j];
      uint64_t k = s.key.load(std::memory_order_acquire);
      if (k == key) {  // an address used before (caching allocators reuse theirs): the common case
        uint8_t st = s.state.load(std::memory_order_relaxed);
        if (st != kBusy && s.state.compare_exchange_strong(st, kBusy, std::memory_order_acquire, std::memory_order_relaxed)) {
          *had_old = st == kLive;
          if (*had_old) *old = read(s);
          write(s, v);
          s.state.store(kLive, std::memory_order_release);
          r = Try::kDone;
        }
        break;
      }
      if (k == 0) break;  // a new key: claimed on the way out of line
    }
  }
  a->in.store(nullptr, std::memory_order_release);
  return r;
}

inline bool Map::insert(uint64_t key, const Value& v, Value* old, bool* had_old) {
  *had_old = false;
  if (__builtin_expect(try_insert(key, v, old, had_old) == Try::kDone, 1)) return true;
  return insert_any(key, v, old, had_old);
}

inline Map::Try Map::try_erase(uint64_t key, Value* out) {
  using namespace detail;
  Announce* a = t_light_announce;
  if (__builtin_expect(!a, 0)) return Try::kSlow;
  Try r = Try::kSlow;
  if (Table* t = try_enter(a)) {
    r = Try::kAbsent;
    const uint64_t cap = t->cap, mask = cap - 1;
    for (uint64_t j = home(t, key), n = 0; n < cap; ++n, j = (j + 1) & mask) {
      Slot& s = t->slots[j];
      uint64_t k = s.key.load(std::memory_order_acquire);
      if (k == key) {
        uint8_t st = s.state.load(std::memory_order_relaxed);
        if (st == kLive && s.state.compare_exchange_strong(st, kBusy, std::memory_order_acquire, std::memory_order_relaxed)) {
          *out = read(s);
          s.state.store(kGone, std::memory_order_release);
          r = Try::kDone;
        } else if (st == kBusy || st == kLive) {
          r = Try::kSlow;  // being written, or taken just now: wait for it out of line
        }
        break;
      }
      if (k == 0) break;
    }
  }
  a->in.store(nullptr, std::memory_order_release);
  return r;
}

inline bool Map::erase(uint64_t key, Value* out) {
  const Try r = try_erase(key, out);
  if (__builtin_expect(r != Try::kSlow, 1)) return r == Try::kDone;
  return erase_any(key, out);
}

}  // namespace vt::live
