// See live_table.h: the slow paths (a thread's first event, a new key, growing, waiting) and the
// rare operations (a context's entries, fork).
#include "load_steps.h"
#include "live_table.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>

namespace vt::live {

namespace detail {
__thread Announce* t_announce __attribute__((tls_model("initial-exec"))) = nullptr;
__thread Announce* t_light_announce __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<bool> g_light_announce{false};
}  // namespace detail

using namespace detail;

namespace {

constexpr uint64_t kMinSlots = 1024;
constexpr uint32_t kClaimBatch = 16;  // claims a thread counts before adding them to the table's

size_t table_bytes(uint64_t cap) { return offsetof(Table, slots) + cap * sizeof(Slot); }

Table* new_table(uint64_t cap) {
  void* m = mmap(nullptr, table_bytes(cap), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  Table* t = static_cast<Table*>(m);  // zeroed by mmap: every slot kFree with key 0
  t->cap = cap;
  t->shift = uint32_t(64 - __builtin_ctzll(cap));
  return t;
}

void free_table(Table* t) { munmap(t, table_bytes(t->cap)); }

// Waits without a system call at first (the other thread is a few stores from done), then gives
// its core away (8 threads on 2 cores: the one waited for may not be running).
struct Backoff {
  int n = 0;
  void pause() {
    if (++n < 64)
      __builtin_ia32_pause();
    else
      sched_yield();
  }
};

// ---- per-thread announcements ----

constexpr int kAnnouncesPerPage = 4096 / sizeof(Announce);

std::atomic<Announce*> g_announces{nullptr};
pthread_key_t g_announce_key;
bool g_announce_key_ok = false;

void release_announce(void* p) {  // at thread exit; a hook after it takes a record again
  Announce* a = static_cast<Announce*>(p);
  a->in.store(nullptr, std::memory_order_release);
  a->claims_for = nullptr;
  a->owned.store(0, std::memory_order_release);
  t_announce = t_light_announce = nullptr;
}

void make_announce_key() {
  g_announce_key_ok = pthread_key_create(&g_announce_key, release_announce) == 0;
}

// Announces t: a store the grower is sure to see before it reads the announcements, or else one
// after which this thread's re-read sees what the grower did (frozen, a new table).
inline void announce_in(Announce* a, Table* t) {
  if (__builtin_expect(g_light_announce.load(std::memory_order_relaxed), 1)) {
    a->in.store(t, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // (the compiler keeps the order too)
  } else {
    a->in.store(t, std::memory_order_seq_cst);
  }
}

// 0: not chosen yet; 1: chosen (g_light_announce says which).
std::atomic<int> g_announcement_chosen{0};

int membarrier(int cmd) {  // (the program's errno as it was: a refusal is ours to know)
  const int saved = errno;
  const int r = int(syscall(__NR_membarrier, cmd, 0, 0));
  errno = saved;
  return r;
}

// What an announcement's own fence would have done, on every thread at once: after it, a plain
// announcement made before is visible here, and one made after re-reads what this thread stored
// before it (the frozen flag, the new table). False when the kernel refused (never seen once
// registered): the caller then gives the growth up (the table stays as it is: safe).
bool heavy_barrier() {
  if (!g_light_announce.load(std::memory_order_relaxed)) return true;  // the announcements fence themselves
  return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

// Waits until no thread is announced in t; false when the barrier that makes announcements
// visible failed (nothing was waited for).
bool wait_until_nobody_in(const Table* t) {
  if (!heavy_barrier()) return false;
  for (Announce* r = g_announces.load(std::memory_order_acquire); r; r = r->next) {
    Backoff b;
    while (r->in.load(std::memory_order_seq_cst) == t) b.pause();
  }
  return true;
}

inline void count_claim(Table* t, Announce* a) {
  if (a->claims_for != t) a->claims_for = t, a->claims = 0;
  if (++a->claims == kClaimBatch) {
    t->claimed.fetch_add(kClaimBatch, std::memory_order_relaxed);
    a->claims = 0;
  }
}

// Grown at half full (keys of live entries and tombstones): linear probing stays short.
inline bool too_full(const Table* t) {
  return t->claimed.load(std::memory_order_relaxed) * 2 > t->cap && !t->grow_failed.load(std::memory_order_relaxed);
}

}  // namespace

namespace detail {

__attribute__((noinline)) Announce* take_announce() {
  Announce* a = nullptr;
  for (Announce* r = g_announces.load(std::memory_order_acquire); r && !a; r = r->next) {
    int free_record = 0;
    if (r->owned.load(std::memory_order_relaxed) == 0 && r->owned.compare_exchange_strong(free_record, 1)) a = r;
  }
  if (!a) {
    void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    Announce* page = static_cast<Announce*>(m);
    for (int i = 0; i < kAnnouncesPerPage; ++i) new (&page[i]) Announce;
    for (int i = 0; i + 1 < kAnnouncesPerPage; ++i) page[i].next = &page[i + 1];
    page[0].owned.store(1, std::memory_order_relaxed);
    Announce* head = g_announces.load(std::memory_order_relaxed);
    do page[kAnnouncesPerPage - 1].next = head;
    while (!g_announces.compare_exchange_weak(head, page, std::memory_order_release, std::memory_order_relaxed));
    a = &page[0];
  }
  if (g_announce_key_ok) pthread_setspecific(g_announce_key, a);  // without the key the record stays taken
  return t_announce = a;
}

__attribute__((noinline)) void wait_busy(Slot& s) {
  Backoff b;
  while (s.state.load(std::memory_order_relaxed) == kBusy) b.pause();
}

// A key not in the table, whose probe reached the free slot j: claims it, or the next free one
// when another key takes it first.
Put put_new(Table* t, Announce* a, uint64_t j, uint64_t key, const Value& v, Value* old, bool* had_old) {
  const uint64_t cap = t->cap, mask = cap - 1;
  for (uint64_t n = 0; n < cap; ++n, j = (j + 1) & mask) {
    Slot& s = t->slots[j];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == 0) {
      if (too_full(t)) return Put::kGrow;
      if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel))
        count_claim(t, a);
      else if (k != key)
        continue;  // another key took it
    } else if (k != key) {
      continue;
    }
    *had_old = take(s, true) == kLive;
    if (*had_old) *old = read(s);
    write(s, v);
    s.state.store(kLive, std::memory_order_release);
    return Put::kDone;
  }
  return Put::kGrow;  // no free slot left
}

}  // namespace detail

__attribute__((noinline)) Table* Map::enter_slow(Announce* a) {
  Backoff b;
  for (;;) {
    Table* t = current.load(std::memory_order_acquire);
    if (!t) {
      choose_announcement();  // before any table is published: never changed once one is
      Table* fresh = new_table(kMinSlots);
      if (!fresh) return nullptr;
      if (!current.compare_exchange_strong(t, fresh)) free_table(fresh);  // another thread's won
      continue;
    }
    announce_in(a, t);
    if (current.load(std::memory_order_seq_cst) != t) {
      a->in.store(nullptr, std::memory_order_release);
      continue;
    }
    if (t->frozen.load(std::memory_order_seq_cst)) {  // being grown: wait for the new table
      a->in.store(nullptr, std::memory_order_release);  // (or for t to thaw, when growing failed)
      b.pause();
      continue;
    }
    // The mode is chosen now (before the first table): the hot paths may take this record.
    if (!t_light_announce && g_light_announce.load(std::memory_order_relaxed)) t_light_announce = a;
    return t;
  }
}

// The whole way (live_table.h's try_* gave up): announce (taking a record on a thread's first
// use), find or claim the key's slot, waiting for a writer or a growth when there is one.
__attribute__((noinline)) bool Map::insert_any(uint64_t key, const Value& v, Value* old, bool* had_old) {
  Announce* a = announce();
  if (!a) return false;
  *had_old = false;
  if (Table* t = enter(a)) {
    const uint64_t cap = t->cap, mask = cap - 1;
    for (uint64_t j = home(t, key), n = 0; n < cap; ++n, j = (j + 1) & mask) {
      Slot& s = t->slots[j];
      uint64_t k = s.key.load(std::memory_order_acquire);
      if (k == key) {
        *had_old = take(s, true) == kLive;
        if (*had_old) *old = read(s);
        write(s, v);
        s.state.store(kLive, std::memory_order_release);
        a->in.store(nullptr, std::memory_order_release);
        return true;
      }
      if (k == 0) {
        if (put_new(t, a, j, key, v, old, had_old) == Put::kDone) {
          a->in.store(nullptr, std::memory_order_release);
          return true;
        }
        break;
      }
    }
    a->in.store(nullptr, std::memory_order_release);
  }
  return insert_slow(a, key, v, old, had_old);
}

__attribute__((noinline)) bool Map::erase_any(uint64_t key, Value* out) {
  Announce* a = announce();
  if (!a) return false;
  Table* t = enter(a);
  if (!t) return false;
  bool found = false;
  const uint64_t cap = t->cap, mask = cap - 1;
  for (uint64_t j = home(t, key), n = 0; n < cap; ++n, j = (j + 1) & mask) {
    Slot& s = t->slots[j];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      if (take(s, false) == kLive) {
        *out = read(s);
        s.state.store(kGone, std::memory_order_release);
        found = true;
      }
      break;
    }
    if (k == 0) break;
  }
  a->in.store(nullptr, std::memory_order_release);
  return found;
}

__attribute__((noinline)) bool Map::insert_slow(Announce* a, uint64_t key, const Value& v, Value* old, bool* had_old) {
  for (;;) {
    Table* t = enter(a);
    if (!t) return false;
    if (put_new(t, a, home(t, key), key, v, old, had_old) == Put::kDone) {
      a->in.store(nullptr, std::memory_order_release);
      return true;
    }
    if (t->grow_failed.load(std::memory_order_relaxed)) {  // and not a slot left
      a->in.store(nullptr, std::memory_order_release);
      return false;
    }
    bool frozen = false;
    bool mine = t->frozen.compare_exchange_strong(frozen, true, std::memory_order_seq_cst);
    a->in.store(nullptr, std::memory_order_release);
    if (mine) grow(t);  // otherwise another thread grows it: enter() waits for that
  }
}

// Called by the thread that froze t (announced in t when it froze it, no longer announced now).
// Copies t's live entries into a table of 4x their number (so at least a quarter of it fills
// with new keys before the next growth), publishes it and gives t up. A table of the same size
// given up before is reused (cleared) rather than mapped anew: churn over ever new addresses
// regrows a table of the same size again and again. On failure t is unfrozen and filled to its
// last slot from then on.
void Map::grow(Table* t) {
  if (!wait_until_nobody_in(t)) {  // no barrier: threads may still be in t, which stays as it is
    t->grow_failed.store(true, std::memory_order_relaxed);
    t->frozen.store(false, std::memory_order_seq_cst);
    return;
  }
  uint64_t live = 0;
  for (uint64_t i = 0; i < t->cap; ++i) live += t->slots[i].state.load(std::memory_order_relaxed) == kLive;
  uint64_t cap = kMinSlots;
  while (cap < live * 4) cap *= 2;
  Table* fresh = spare.exchange(nullptr);
  if (fresh && fresh->cap == cap) {
    memset(static_cast<void*>(fresh->slots), 0, cap * sizeof(Slot));
    fresh->claimed.store(0, std::memory_order_relaxed);
    fresh->frozen.store(false, std::memory_order_relaxed);
    fresh->grow_failed.store(false, std::memory_order_relaxed);
  } else {
    if (fresh) free_table(fresh);
    fresh = new_table(cap);
  }
  if (!fresh) {
    t->grow_failed.store(true, std::memory_order_relaxed);
    t->frozen.store(false, std::memory_order_seq_cst);
    return;
  }
  for (uint64_t i = 0; i < t->cap; ++i) {
    const Slot& s = t->slots[i];
    if (s.state.load(std::memory_order_relaxed) != kLive) continue;
    uint64_t key = s.key.load(std::memory_order_relaxed);
    uint64_t j = home(fresh, key);
    while (fresh->slots[j].key.load(std::memory_order_relaxed)) j = (j + 1) & (cap - 1);
    Slot& d = fresh->slots[j];
    d.key.store(key, std::memory_order_relaxed);
    write(d, read(s));
    d.state.store(kLive, std::memory_order_relaxed);
  }
  fresh->claimed.store(live, std::memory_order_relaxed);
  current.store(fresh, std::memory_order_seq_cst);  // publishes the copied slots too
  // Threads that announced t before the store above; without the barrier t is left mapped
  // forever (a thread may still read its frozen flag).
  if (!wait_until_nobody_in(t)) return;
  if (Table* older = spare.exchange(t)) free_table(older);
}

int Map::erase_context(uint64_t ctx, Value* out, int cap) {
  Announce* a = announce();
  if (!a) return 0;
  Table* t = enter(a);
  if (!t) return 0;
  int n = 0;
  for (uint64_t i = 0; i < t->cap && n < cap; ++i) {
    Slot& s = t->slots[i];
    if (s.state.load(std::memory_order_relaxed) != kLive || take(s, false) != kLive) continue;
    bool match = s.context == ctx;
    if (match) out[n++] = read(s);
    s.state.store(match ? kGone : kLive, std::memory_order_release);
  }
  a->in.store(nullptr, std::memory_order_release);
  return n;
}

uint64_t Map::live() {
  Announce* a = announce();
  if (!a) return 0;
  Table* t = enter(a);
  uint64_t n = 0;
  if (t)
    for (uint64_t i = 0; i < t->cap; ++i) n += t->slots[i].state.load(std::memory_order_relaxed) == kLive;
  a->in.store(nullptr, std::memory_order_release);
  return n;
}

void Map::reset_in_child() {
  if (Table* t = current.exchange(nullptr)) free_table(t);
  if (Table* t = spare.exchange(nullptr)) free_table(t);
}

// Registering makes the private expedited barrier available to this process (and its forked
// children: the registration is the address space's); with threads already running the kernel
// waits for an RCU grace period, once.
void choose_announcement() {
  if (g_announcement_chosen.load(std::memory_order_acquire)) return;
  const bool light = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  int unchosen = 0;
  if (g_announcement_chosen.load(std::memory_order_relaxed) == 0) {
    // Two threads may race here: both registered (idempotent) with the same answer.
    g_light_announce.store(light, std::memory_order_relaxed);
    g_announcement_chosen.compare_exchange_strong(unchosen, 1, std::memory_order_release);
  }
}

void use_light_announcements(bool light) {
  g_light_announce.store(light, std::memory_order_relaxed);
  t_light_announce = light ? t_announce : nullptr;
}

void forget_threads_in_child() {
  // Linux keeps the registration across fork; a kernel that did not would refuse every barrier
  // (and so every growth): the child, one thread now, then fences its announcements itself.
  if (g_light_announce.load(std::memory_order_relaxed) && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
    use_light_announcements(false);
  for (Announce* r = g_announces.load(std::memory_order_acquire); r; r = r->next) {
    r->in.store(nullptr, std::memory_order_relaxed);
    r->claims_for = nullptr;
    if (r != t_announce) r->owned.store(0, std::memory_order_relaxed);
  }
}

}  // namespace vt::live

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void prepare_live_table() {
  vt::live::make_announce_key();
  vt::live::choose_announcement();  // at load the process has usually one thread: registering is cheap
}
}  // namespace vt::load_steps
