// The live tracker's lock-free map (interpose/live/live_table.h) on its own: growth from one table to
// the next while other threads insert and erase, frees from another thread than the allocating
// one, a context's entries taken out during churn, and churn over ever new keys not growing the
// table without end. Run under ThreadSanitizer too (docs/PERFORMANCE.md, "The live tracker
// without locks", has the command).
#include <catch2/catch.hpp>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "live_table.h"
#include "live_tracker.h"

using vt::live::Map;
using vt::live::Value;

namespace {

Value value_for(uint64_t key) { return {key * 3, key & 1 ? 0x10u : 0x20u, uint32_t(key % 977), uint8_t(key % 5), 0}; }

}  // namespace

TEST_CASE("live table: one thread, through many growths: every entry comes back as it went in") {
  Map m;
  constexpr uint64_t kN = 200000;
  for (uint64_t k = 1; k <= kN; ++k) {
    Value old;
    bool had_old = true;
    REQUIRE(m.insert(k << 9, value_for(k), &old, &had_old));
    REQUIRE_FALSE(had_old);
  }
  CHECK(m.live() == kN);
  // A second acquire at a live key hands back what was there.
  Value old{};
  bool had_old = false;
  REQUIRE(m.insert(7 << 9, value_for(8), &old, &had_old));
  CHECK(had_old);
  CHECK(old.size == value_for(7).size);
  CHECK(old.stack == value_for(7).stack);
  for (uint64_t k = 1; k <= kN; ++k) {
    Value v{};
    REQUIRE(m.erase(k << 9, &v));
    Value want = value_for(k == 7 ? 8 : k);
    REQUIRE(v.size == want.size);
    REQUIRE(v.context == want.context);
    REQUIRE(v.stack == want.stack);
    REQUIRE(v.row == want.row);
  }
  Value v;
  CHECK_FALSE(m.erase(5 << 9, &v));  // a double free finds nothing
  CHECK(m.live() == 0);
}

namespace {
// The announcement mode for one test: membarrier's plain stores (as chosen where the kernel
// allows) or the xchg fences, so that both ways of growing run here whatever the kernel offers.
// Only between tests: no thread is inside a table while it changes.
struct AnnouncementMode {
  bool saved;
  explicit AnnouncementMode(bool light) {
    vt::live::choose_announcement();
    saved = vt::live::detail::g_light_announce.load();
    if (light && !saved) WARN("membarrier is refused here: this case runs with xchg fences, the plain stores are untested");
    if (!light || saved) vt::live::use_light_announcements(light);
  }
  ~AnnouncementMode() { vt::live::use_light_announcements(saved); }
};
}  // namespace

TEST_CASE("live table: 8 threads insert while the table grows and free each other's entries") {
  AnnouncementMode mode(GENERATE(true, false));
  Map m;
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 40000;
  std::atomic<uint64_t> erased_bytes{0}, erased{0}, missing{0};
  std::atomic<int> inserted_threads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        uint64_t key = (uint64_t(t) << 40) | ((i + 1) << 8);
        Value old;
        bool had_old = false;
        if (!m.insert(key, value_for(key), &old, &had_old) || had_old) missing.fetch_add(1);
      }
      inserted_threads.fetch_add(1);
      while (inserted_threads.load() < kThreads) std::this_thread::yield();
      // Free the next thread's entries: frees from another thread than the allocating one, while
      // the others are still freeing (and, in the first phase, growing).
      uint64_t other = uint64_t((t + 1) % kThreads);
      for (uint64_t i = 0; i < kPerThread; ++i) {
        uint64_t key = (other << 40) | ((i + 1) << 8);
        Value v;
        if (m.erase(key, &v) && v.size == key * 3) {
          erased.fetch_add(1);
          erased_bytes.fetch_add(v.size);
        } else {
          missing.fetch_add(1);
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(missing.load() == 0);
  CHECK(erased.load() == kThreads * kPerThread);
  CHECK(m.live() == 0);
}

TEST_CASE("live table: concurrent churn, each thread on its own keys, with growth in between") {
  AnnouncementMode mode(GENERATE(true, false));
  Map m;
  constexpr int kThreads = 8;
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint64_t> mine;
      for (uint64_t i = 0; i < 60000; ++i) {
        uint64_t key = (uint64_t(t + 1) << 44) | ((i + 1) << 8);  // ever new keys: tombstones pile up
        Value old;
        bool had_old = false;
        if (!m.insert(key, value_for(key), &old, &had_old) || had_old) wrong.fetch_add(1);
        mine.push_back(key);
        if (mine.size() > 300 || (i % 7 == 0 && !mine.empty())) {
          uint64_t k = mine.front();
          mine.erase(mine.begin());
          Value v;
          if (!m.erase(k, &v) || v.size != k * 3) wrong.fetch_add(1);
        }
      }
      for (uint64_t k : mine) {
        Value v;
        if (!m.erase(k, &v) || v.size != k * 3) wrong.fetch_add(1);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  CHECK(m.live() == 0);
}

TEST_CASE("live table: a context's entries are taken out while other threads churn on other contexts") {
  Map m;
  constexpr uint64_t kDoomed = 5000;
  for (uint64_t i = 1; i <= kDoomed; ++i) {
    Value old;
    bool had_old;
    REQUIRE(m.insert(0x9000000000ull + (i << 8), {64, 0x77, 1, 0, 0}, &old, &had_old));
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0};
  std::thread churn([&] {
    for (uint64_t i = 1; !stop.load(); ++i) {
      uint64_t key = 0x1000000000ull + ((i % 50000) << 8);
      Value old, v;
      bool had_old;
      if (!m.insert(key, {32, 0x55, 2, 0, 0}, &old, &had_old) || !m.erase(key, &v) || v.context != 0x55) wrong.fetch_add(1);
    }
  });
  uint64_t taken = 0;
  Value out[64];
  int n;
  do {
    n = m.erase_context(0x77, out, 64);
    for (int i = 0; i < n; ++i)
      if (out[i].context != 0x77 || out[i].size != 64) wrong.fetch_add(1);
    taken += uint64_t(n);
  } while (n == 64);
  stop.store(true);
  churn.join();
  CHECK(taken == kDoomed);
  CHECK(wrong.load() == 0);
  CHECK(m.live() == 0);
}

namespace {
// Eight threads, each allocating and freeing 4 KiB 20000 times on device t % 2.
void eight_threads_churn() {
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        uint64_t addr = (uint64_t(t + 1) << 36) | ((i % 3000 + 1) << 12);
        vt::Event a;
        a.set_op(vt::HookId::cuMemAlloc_v2);
        a.device = t % 2;
        a.context = 0x10;
        a.stack = uint32_t(t + 1);
        a.set_addr(addr);
        a.set_size(4096);
        vt::track_event(a);
        vt::Event f;
        f.set_op(vt::HookId::cuMemFree_v2);
        f.device = t % 2;
        f.context = 0x10;
        f.set_addr(addr);
        vt::track_event(f);
      }
    });
  for (auto& th : threads) th.join();
}
}  // namespace

TEST_CASE("live tracker: 8 threads allocating and freeing through track_event end with nothing live") {
  vt::forget_live_state();
  eight_threads_churn();  // each thread counts on its own (live_counters.h)
  CHECK(vt::live_bytes(-1, vt::kLiveDevice) == 0);
  CHECK(vt::peak_bytes(0) <= 4 * 4096);  // sampled: never more than the four threads of device 0 at once
  for (uint32_t s = 1; s <= 8; ++s) CHECK(vt::site_bytes(s) == 0);
}

TEST_CASE("live tracker: after a reset the peak of 8 threads is exact") {
  vt::forget_live_state();
  vt::reset_peak(-1);  // (the pytest plugin's call before each test)
  eight_threads_churn();
  CHECK(vt::live_bytes(-1, vt::kLiveDevice) == 0);
  CHECK(vt::peak_bytes(0) >= 4096);
  CHECK(vt::peak_bytes(0) <= 4 * 4096);  // at most the four threads of device 0 at once
}

namespace {

// In a forked child: the kernel refuses membarrier from now on (EPERM), as a seccomp policy can.
bool refuse_membarrier() {
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Runs `body` in a forked child where membarrier is refused; its exit status (0: every check held,
// 90: no seccomp here).
template <typename Body>
int in_child_refusing_membarrier(Body body) {
  pid_t pid = fork();
  if (pid == 0) _exit(refuse_membarrier() ? body() : 90);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Inserts then erases n keys from 4 threads; 0 when every value came back as it went in.
int churn_four_threads(Map& m, uint64_t n) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 1; i <= n; ++i) {
        Value old;
        bool had_old = false;
        if (!m.insert((t + 1) << 40 | i << 8, value_for(i), &old, &had_old) || had_old) wrong++;
      }
      for (uint64_t i = 1; i <= n; ++i) {
        Value v;
        if (!m.erase((t + 1) << 40 | i << 8, &v) || v.size != value_for(i).size) wrong++;
      }
    });
  for (auto& th : threads) th.join();
  return wrong.load() == 0 && m.live() == 0 ? 0 : 1;
}

}  // namespace

TEST_CASE("live table: a forked child refused membarrier fences its own announcements and still grows") {
  vt::live::choose_announcement();
  const int rc = in_child_refusing_membarrier([] {
    vt::live::forget_threads_in_child();  // (what the fork handler does)
    if (vt::live::detail::g_light_announce.load()) return 2;
    Map m;
    return churn_four_threads(m, 30000);  // through several growths
  });
  if (rc == 90) FAIL("seccomp filters are not available here: nothing was tested");
  CHECK(rc == 0);
}

TEST_CASE("live table: a barrier refused after registering gives growth up: the table fills, nothing is lost") {
  AnnouncementMode mode(true);
  const bool light = vt::live::detail::g_light_announce.load();
  const int rc = in_child_refusing_membarrier([light] {
    Map m;
    uint64_t kept = 0;
    for (uint64_t i = 1; i <= 5000; ++i) {
      Value old;
      bool had_old = false;
      if (!m.insert(i << 8, value_for(i), &old, &had_old)) break;
      ++kept;
    }
    // Registered: the first growth needs the barrier, is given up, and the 1024 slots fill. Not
    // registered (a kernel without membarrier): the xchg fences need no barrier, and it grows.
    if (kept != (light ? 1024u : 5000u)) return 3;
    for (uint64_t i = 1; i <= kept; ++i) {
      Value v;
      if (!m.erase(i << 8, &v) || v.size != value_for(i).size || v.stack != value_for(i).stack) return 4;
    }
    return m.live() == 0 ? 0 : 5;
  });
  if (rc == 90) FAIL("seccomp filters are not available here: nothing was tested");
  CHECK(rc == 0);
}
