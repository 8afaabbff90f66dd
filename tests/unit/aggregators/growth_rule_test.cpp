// The growth rule's checkpoint cadence (aggregators/growth_rule.h): every 8 events, then, once
// more than 128 checkpoints were taken, every other one is dropped and the next come twice as far
// apart, starting with the very next one (the cadence before the shared rule; a 1 M-event report
// showed the difference in its growth figures).
#include <catch2/catch.hpp>

#include "aggregators/growth_rule.h"

using namespace vt::analyzer;

TEST_CASE("growth rule: checkpoints every 8 events, then twice as far apart after thinning") {
  SiteCheckpoints c;
  std::vector<uint64_t> due_at;
  for (uint64_t event = 1; event <= 8 * 129 + 64; ++event)
    if (c.due()) {
      due_at.push_back(event);
      c.add(event, {}, {});
    }
  REQUIRE(due_at.size() >= 131);
  CHECK(due_at[0] == 8);
  CHECK(due_at[128] == 8 * 129);  // the 129th: thinned to 65 right after
  CHECK(c.times().size() == 65 + (due_at.size() - 129));
  CHECK(due_at[129] == 8 * 129 + 16);  // the next one already at the new cadence
  CHECK(due_at[130] == 8 * 129 + 32);
}

namespace {

constexpr uint64_t kMiB = 1 << 20;
const SiteKey kSite{1, 0, Bucket::Device};

// k checkpoints of one site; bytes(thread, i) per thread.
struct Series {
  std::vector<SiteSnapshot> sites;
  std::vector<ThreadSiteSnapshot> threads;
  std::vector<const SiteSnapshot*> site_ptrs() const {
    std::vector<const SiteSnapshot*> v;
    for (const auto& s : sites) v.push_back(&s);
    return v;
  }
  std::vector<const ThreadSiteSnapshot*> thread_ptrs() const {
    std::vector<const ThreadSiteSnapshot*> v;
    for (const auto& s : threads) v.push_back(&s);
    return v;
  }
};

template <typename F>
Series series(size_t k, uint32_t n_threads, F bytes) {
  Series s;
  for (size_t i = 0; i < k; ++i) {
    SiteSnapshot site;
    ThreadSiteSnapshot th;
    th.one_thread = false;
    uint64_t total = 0;
    for (uint32_t t = 0; t < n_threads; ++t) {
      uint64_t b = bytes(t, i);
      if (b) th.bytes[ThreadSiteKey{kSite, 100 + t}] = b;
      total += b;
    }
    if (total) site[kSite] = total;
    s.sites.push_back(site);
    s.threads.push_back(th);
  }
  return s;
}

}  // namespace

TEST_CASE("growth rule: more threads holding their temporaries at once is no growth") {
  // 8 threads join one after another; each holds 2 MiB of temporaries whenever it runs.
  Series s = series(16, 8, [](uint32_t t, size_t i) { return i >= 2 * t ? 2 * kMiB : 0; });
  CHECK(growing_sites(s.site_ptrs(), {}, nullptr, kMiB).size() == 1);  // the site's total alone reads as growth
  CHECK(growing_sites(s.site_ptrs(), s.thread_ptrs(), nullptr, kMiB).empty());
}

TEST_CASE("growth rule: a site's growth is attributed to the thread whose own bytes grew") {
  // Thread 100 keeps 1 MiB more at each checkpoint; threads 101-103 churn 0 or 4 MiB.
  Series s = series(12, 4, [](uint32_t t, size_t i) { return t == 0 ? i * kMiB : (i + t) % 2 ? 4 * kMiB : 0; });
  auto hits = growing_sites(s.site_ptrs(), s.thread_ptrs(), nullptr, kMiB);
  REQUIRE(hits.size() == 1);
  REQUIRE(hits[0].threads.size() == 1);
  CHECK(hits[0].threads[0].tid == 100);
  CHECK(hits[0].threads[0].growth == 11 * kMiB);
}

TEST_CASE("growth rule: checkpoints taken while one thread allocated at a site count as its first thread's") {
  // One thread grows alone at the site for 6 checkpoints (no entries for it then: one owner), then
  // a second one starts churning there: the first's series runs through both parts.
  Series s = series(12, 2, [](uint32_t t, size_t i) { return t == 0 ? (i + 1) * kMiB : i >= 6 && i % 2 ? kMiB : 0; });
  for (size_t i = 0; i < 6; ++i) s.threads[i].bytes.clear();
  FirstOwner first = [](const SiteKey& k, uint32_t* tid) {
    *tid = 100;
    return k == kSite;
  };
  auto hits = growing_sites(s.site_ptrs(), s.thread_ptrs(), first, kMiB);
  REQUIRE(hits.size() == 1);
  REQUIRE(hits[0].threads.size() == 1);
  CHECK(hits[0].threads[0].tid == 100);
  CHECK(hits[0].threads[0].growth == 11 * kMiB);
}

TEST_CASE("thread shares: one owner costs nothing, a second thread splits the row from then on") {
  ThreadShares t;
  t.change(3, 42, +1, 10, 0);
  t.change(3, 42, +1, 5, 10);
  CHECK_FALSE(t.several());
  uint32_t tid = 0;
  REQUIRE(t.one_owner(3, &tid));
  CHECK(tid == 42);
  CHECK(t.threads_at(3) == 1);
  t.change(3, 7, +1, 4, 15);  // what the row held was thread 42's
  CHECK(t.several());
  CHECK_FALSE(t.one_owner(3, &tid));
  CHECK(t.threads_at(3) == 2);
  t.change(3, 42, -1, 10, 19);  // released (by any thread): counted against the one that allocated
  auto of = t.of(3, 9);
  REQUIRE(of.size() == 2);
  CHECK(of[0] == std::make_pair(uint32_t(42), uint64_t(5)));
  CHECK(of[1] == std::make_pair(uint32_t(7), uint64_t(4)));
  CHECK(t.threads_at(4) == 0);
  CHECK(t.of(4, 0).empty());
}
