// Clock alignment, the flush policy on a fake clock, and the bounded buffer pool and name table
// the recording path relies on.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "buffer_pool.h"
#include "clock_align.h"
#include "flush_loop.h"
#include "name_table.h"

using namespace vt::cupti;

namespace {

// A monotonic clock whose successive reads advance by scripted steps, and a CUPTI clock that is
// the true time + 5 s (CUPTI reads its clock half-way between our two reads).
std::vector<uint64_t> g_steps;
size_t g_step = 0;
uint64_t g_mono = 1'000'000;
uint64_t g_last_mid = 0;
uint64_t fake_mono() {
  uint64_t s = g_step < g_steps.size() ? g_steps[g_step++] : 100;
  g_mono += s;
  return g_mono;
}
bool fake_cupti(uint64_t* out) {
  g_last_mid = g_mono + (g_step < g_steps.size() ? g_steps[g_step] : 100) / 2;
  *out = g_last_mid + 5'000'000'000ull;
  return true;
}

}  // namespace

TEST_CASE("the clock offset comes from the tightest of several paired reads") {
  // Reads: tries of windows 900, 40, 700 ns (the first step of each try is the gap since the last).
  g_steps = {10, 900, 10, 40, 10, 700};
  g_step = 0;
  ClockSample s = sample_offset(fake_mono, fake_cupti, 3);
  REQUIRE(s.ok);
  CHECK(s.window == 40);
  CHECK(s.offset == 5'000'000'000);

  ClockAlign c;
  CHECK_FALSE(c.known());
  CHECK(c.update(s));
  CHECK(c.to_mono(6'000'000'000) == 1'000'000'000);
  CHECK(c.to_mono(0) == 0);  // "no timestamp" stays recognisable

  ClockSample jitter = s;
  jitter.offset += 1500;  // noise: within max(2 us, 2 x windows)
  CHECK_FALSE(c.update(jitter));
  CHECK(c.offset() == 5'000'000'000);
  ClockSample step = s;
  step.offset -= 3'000'000;  // the wall clock was stepped by 3 ms: taken
  CHECK(c.update(step));
  CHECK(c.offset() == 4'997'000'000);
  ClockSample bad;
  CHECK_FALSE(c.update(bad));
}

namespace {

struct FakeRun {
  uint64_t now = 0;
  std::vector<uint64_t> wakes;  // early wake-ups (pool running low), in time order
  size_t next_wake = 0;
  uint64_t slow_at = UINT64_MAX, slow_ns = 0;  // one flush that takes long
  uint64_t stop_at = 1'000'000'000;
  std::vector<uint64_t> periodic, early;
};

uint64_t run_now(void* c) { return static_cast<FakeRun*>(c)->now; }
bool run_wait(void* c, uint64_t deadline) {
  FakeRun* f = static_cast<FakeRun*>(c);
  if (f->next_wake < f->wakes.size() && f->wakes[f->next_wake] < deadline) {
    f->now = f->wakes[f->next_wake++];
    return true;
  }
  if (deadline > f->now) f->now = deadline;
  return false;
}
bool run_tick(void* c, bool periodic) {
  FakeRun* f = static_cast<FakeRun*>(c);
  (periodic ? f->periodic : f->early).push_back(f->now);
  if (periodic && f->now >= f->slow_at && f->slow_ns) {
    f->now += f->slow_ns;
    f->slow_ns = 0;
  }
  return f->now < f->stop_at;
}

}  // namespace

TEST_CASE("the flusher flushes every 100 ms on a fixed grid") {
  FakeRun f;
  FlushLoop loop;
  loop.hooks = {run_now, run_wait, run_tick, &f};
  loop.run();
  REQUIRE(f.periodic.size() == 10);
  for (size_t i = 0; i < f.periodic.size(); ++i) CHECK(f.periodic[i] == (i + 1) * 100'000'000);
  CHECK(f.early.empty());
  // So a crash loses at most one interval of kernel records.
}

TEST_CASE("a slow flush does not cause a burst, and early wake-ups only drain") {
  FakeRun f;
  f.slow_at = 200'000'000;
  f.slow_ns = 250'000'000;  // the flush at 200 ms returns at 450 ms
  f.wakes = {120'000'000, 130'000'000};
  FlushLoop loop;
  loop.hooks = {run_now, run_wait, run_tick, &f};
  loop.run();
  CHECK(f.early == std::vector<uint64_t>{120'000'000, 130'000'000});
  // 100, 200 (slow), then the grid resumes at 500: 300 and 400 are skipped, not replayed.
  REQUIRE(f.periodic.size() >= 4);
  CHECK(f.periodic[0] == 100'000'000);
  CHECK(f.periodic[1] == 200'000'000);
  CHECK(f.periodic[2] == 500'000'000);
  CHECK(f.periodic[3] == 600'000'000);
  CHECK(loop.early_ticks == 2);
}

TEST_CASE("the real waker: a wake is seen once, a past deadline returns at once") {
  Waker w;
  CHECK_FALSE(w.wait_until(10, 20));
  w.wake();
  CHECK(w.wait_until(UINT64_MAX, 0));
  CHECK_FALSE(w.wait_until(5, 10));
}

TEST_CASE("the buffer pool is bounded, recycles, and drains oldest first") {
  alignas(8) static uint8_t mem[4 * 1024];
  BufferPool pool;
  pool.init(mem, 1024, 4);
  uint8_t* b[4];
  for (auto& x : b) REQUIRE((x = pool.lend()) != nullptr);
  CHECK(pool.lend() == nullptr);  // CUPTI gets no buffer and counts the records it drops
  CHECK(pool.refused() == 1);
  CHECK(pool.take_refused() == 1);
  CHECK(pool.refused() == 0);

  int local;
  CHECK_FALSE(pool.complete(reinterpret_cast<uint8_t*>(&local), 10));  // not ours
  CHECK_FALSE(pool.complete(b[0] + 8, 10));                             // not a buffer start
  CHECK(pool.complete(b[2], 100));
  CHECK(pool.complete(b[0], 5000));  // clamped to the buffer size
  CHECK_FALSE(pool.complete(b[0], 10));  // completed twice
  CHECK(pool.in_state(BufferPool::kDone) == 2);

  struct Seen {
    std::vector<std::pair<uint8_t*, size_t>> v;
  } seen;
  int n = pool.drain([](void* c, uint8_t* buf, size_t valid) { static_cast<Seen*>(c)->v.push_back({buf, valid}); }, &seen);
  CHECK(n == 2);
  REQUIRE(seen.v.size() == 2);
  CHECK(seen.v[0] == std::make_pair(b[2], size_t(100)));
  CHECK(seen.v[1] == std::make_pair(b[0], size_t(1024)));
  CHECK(pool.in_state(BufferPool::kFree) == 2);
  CHECK(pool.lend() != nullptr);
  CHECK(pool.lend() != nullptr);
  CHECK(pool.lend() == nullptr);
}

TEST_CASE("the buffer pool takes back buffers handed to another client, or kept by a finalised CUPTI") {
  alignas(8) static uint8_t mem[4 * 1024];
  BufferPool pool;
  pool.init(mem, 1024, 4);
  uint8_t* a = pool.lend();
  uint8_t* b = pool.lend();
  uint8_t* c = pool.lend();
  REQUIRE((a && b && c));
  int local;
  CHECK(pool.owns(a));
  CHECK_FALSE(pool.owns(reinterpret_cast<uint8_t*>(&local)));
  CHECK_FALSE(pool.owns(a + 8));
  CHECK(pool.reclaim(a));        // completed to the other client's callback: back, not decoded
  CHECK_FALSE(pool.reclaim(a));  // not lent any more
  CHECK(pool.complete(b, 10));
  CHECK_FALSE(pool.reclaim(b));  // completed to us: drained as usual, never reclaimed
  CHECK(pool.reclaim_all_lent() == 1);  // c
  CHECK(pool.in_state(BufferPool::kFree) == 3);
  CHECK(pool.in_state(BufferPool::kDone) == 1);
}

TEST_CASE("the name table hands out stable ids and stays bounded") {
  static NameTable t;  // ~100 KiB: static, as in the recorder
  t.clear();
  bool is_new = false;
  const char* a = "_Z1av";
  const char* b = "_Z1bv";
  uint32_t ia = t.intern(a, &is_new);
  CHECK(is_new);
  CHECK(t.intern(a, &is_new) == ia);
  CHECK_FALSE(is_new);
  uint32_t ib = t.intern(b, &is_new);
  CHECK(is_new);
  CHECK(ib != ia);
  CHECK(t.intern(nullptr, &is_new) == 0);

  // Filling it past 3/4 clears it: names are announced again under new ids (bounded memory).
  static char names[NameTable::kSlots][16];
  uint32_t last = 0;
  for (uint32_t i = 0; i < NameTable::kSlots; ++i) {
    snprintf(names[i], sizeof names[i], "_Z1n%uv", i);
    last = t.intern(names[i], &is_new);
    CHECK(is_new);
  }
  CHECK(t.size() <= NameTable::kSlots * 3 / 4);
  uint32_t again = t.intern(a, &is_new);
  CHECK(is_new);  // forgotten by the clear: written again
  CHECK(again > last);
}
