// Rule 15's trim as the analyzer applies it (analyzer/replay/live_state.cpp): a pool's footprint after
// a synchronize is its live allocations, computed from what changed since the last trim (or, past
// PoolState::kMaxChanges changes, from a walk of the live allocations). Checked against a model
// that keeps the pool's reserved memory page by page: after every event and every synchronize,
// the footprint and the largest free gap must be the model's, on random sequences where freed
// blocks are handed out again whole, in parts and straddling two freed blocks.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "accounting.h"
#include "live_state.h"

using namespace vt;
using vt::analyzer::LiveState;
using vt::analyzer::PoolState;
using vt::analyzer::Record;

namespace {

constexpr uint64_t kPage = 4096, kBase = 0x7f0000000000ull;

Record event(HookId op, uint64_t addr, uint64_t size) {
  Record r;
  r.op = &kOps[int(op)];
  r.tag = r.op->code;
  r.context = 0x1000;
  r.device = 0;
  r.stream = 0x77;
  r.addr = addr;
  r.fields = format::kEvAddr;
  if (size) {
    r.size = size;
    r.fields |= format::kEvSize;
  }
  return r;
}

// The pool's reserved and live pages, by the rule itself.
struct Model {
  std::set<uint64_t> reserved, live;
  void alloc(uint64_t page, uint64_t pages) {
    for (uint64_t i = 0; i < pages; ++i) reserved.insert(page + i), live.insert(page + i);
  }
  void free(uint64_t page, uint64_t pages) {
    for (uint64_t i = 0; i < pages; ++i) live.erase(page + i);
  }
  void sync() { reserved = live; }  // threshold 0: everything not live goes back
  // cuMemPoolTrimTo(keep) / a synchronize at threshold `keep`, as the analyzer models it: the
  // free runs go back largest first (ties in address order), each from its end, until the
  // footprint is `keep`; nothing goes when it is at or below `keep` already.
  void trim(uint64_t keep_pages) {
    if (!keep_pages) return sync();
    if (keep_pages >= reserved.size()) return;
    std::vector<std::pair<uint64_t, uint64_t>> runs;  // first page, pages
    for (uint64_t p : reserved) {
      if (live.count(p)) continue;
      if (!runs.empty() && runs.back().first + runs.back().second == p) runs.back().second++;
      else runs.push_back({p, 1});
    }
    std::stable_sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [first, pages] : runs)
      for (uint64_t i = pages; i-- > 0 && reserved.size() > keep_pages;) reserved.erase(first + i);
  }
  uint64_t largest_gap() const {
    uint64_t best = 0, run = 0, prev = ~0ull;
    for (uint64_t p : reserved) {
      if (live.count(p)) {
        run = 0;
      } else {
        run = (run && p == prev + 1) ? run + 1 : 1;
        best = std::max(best, run);
      }
      prev = p;
    }
    return best * kPage;
  }
};

const PoolState& default_pool(const LiveState& s) { return s.pools().at(default_pool_key(0)); }

void check_same(const LiveState& s, const Model& m, int step) {
  INFO("step " << step);
  const PoolState& p = default_pool(s);
  REQUIRE(p.footprint() == m.reserved.size() * kPage);
  REQUIRE(p.live_bytes == m.live.size() * kPage);
  REQUIRE(p.largest_free_gap(s) == m.largest_gap());
}

// Random allocations in a window of pages: a free block is handed out again in any part of it
// (the model's pages say which addresses are free), frees of random live blocks, synchronizes;
// with `trims`, also cuMemPoolTrimTo with a random number of bytes to keep.
void run(uint32_t seed, int steps, int sync_every, bool trims = false) {
  std::mt19937 rng(seed);
  LiveState s;
  Model m;
  std::map<uint64_t, uint64_t> blocks;  // live: first page -> pages
  constexpr uint64_t kWindow = 512;
  for (int step = 0; step < steps; ++step) {
    const int what = int(rng() % 10);
    if (what < 5 || blocks.empty()) {
      const uint64_t pages = 1 + rng() % 8, at = rng() % (kWindow - pages);
      bool free_here = true;
      for (uint64_t i = 0; i < pages && free_here; ++i) free_here = !m.live.count(at + i);
      if (!free_here) continue;
      s.apply(event(HookId::cuMemAllocAsync, kBase + at * kPage, pages * kPage));
      m.alloc(at, pages);
      blocks[at] = pages;
    } else {
      auto it = blocks.begin();
      std::advance(it, rng() % blocks.size());
      s.apply(event(HookId::cuMemFreeAsync, kBase + it->first * kPage, 0));
      m.free(it->first, it->second);
      blocks.erase(it);
    }
    if (sync_every && rng() % uint32_t(sync_every) == 0) {
      s.pools_synchronized(0);
      m.sync();
    }
    if (trims && rng() % 16 == 0) {
      const uint64_t keep = rng() % 3 ? rng() % 400 : 0;  // pages
      Record t = event(HookId::cuMemPoolTrimTo, 0, keep * kPage);
      t.aux = default_pool_key(0);  // (the trace never saw it created: the device's default pool)
      t.fields |= format::kEvAux;
      s.apply(t);
      m.trim(keep);
    }
    check_same(s, m, step);
  }
  s.pools_synchronized(0);
  m.sync();
  check_same(s, m, steps);
}

}  // namespace

TEST_CASE("pool trim: the footprint after a synchronize is the live allocations (random, from the changes)") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    run(seed, 2000, 8);
  }
}

TEST_CASE("pool trim: cuMemPoolTrimTo keeps what it is asked to, the largest free ranges going first (random)") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    run(seed, 2000, 24, true);
  }
}

TEST_CASE("pool trim: a release threshold between 0 and the footprint keeps that much at a synchronize") {
  LiveState s;
  Record thr = event(HookId::cuMemPoolSetAttribute, 0, 10 * kPage);
  thr.aux = default_pool_key(0);
  thr.aux2 = kPoolAttrReleaseThreshold;
  thr.fields |= format::kEvAux | format::kEvAux2;
  s.apply(thr);
  REQUIRE(default_pool(s).release_threshold == 10 * kPage);
  s.apply(event(HookId::cuMemAllocAsync, kBase, 16 * kPage));
  s.apply(event(HookId::cuMemAllocAsync, kBase + 16 * kPage, 4 * kPage));
  s.apply(event(HookId::cuMemAllocAsync, kBase + 20 * kPage, 8 * kPage));
  s.apply(event(HookId::cuMemFreeAsync, kBase, 0));
  s.apply(event(HookId::cuMemFreeAsync, kBase + 20 * kPage, 0));
  // 28 pages, 4 live: down to 10. The 16 free pages go first, then 2 of the 8 (from its end).
  s.pools_synchronized(0);
  CHECK(default_pool(s).footprint() == 10 * kPage);
  CHECK(default_pool(s).largest_free_gap(s) == 6 * kPage);
  s.pools_synchronized(0);  // at the threshold: nothing more goes
  CHECK(default_pool(s).footprint() == 10 * kPage);
  s.apply(event(HookId::cuMemAllocAsync, kBase + 20 * kPage, 6 * kPage));  // the kept space handed out again
  CHECK(default_pool(s).footprint() == 10 * kPage);
  CHECK(default_pool(s).largest_free_gap(s) == 0);
}

TEST_CASE("pool trim: past kMaxChanges between synchronizes, the walk of the live allocations gives the same") {
  // More frees than the pool keeps between two synchronizes: the trim walks the live map.
  LiveState s;
  Model m;
  for (uint64_t i = 0; i < 64; ++i) {  // every other block of the first 128 stays live
    s.apply(event(HookId::cuMemAllocAsync, kBase + 2 * i * kPage, kPage));
    m.alloc(2 * i, 1);
  }
  const uint64_t pairs = PoolState::kMaxChanges + 10;
  for (uint64_t i = 0; i < pairs; ++i) {  // a block handed out and freed, at 4096 places in turn
    const uint64_t page = 128 + i % 4096;
    s.apply(event(HookId::cuMemAllocAsync, kBase + page * kPage, kPage));
    s.apply(event(HookId::cuMemFreeAsync, kBase + page * kPage, 0));
    m.alloc(page, 1);
    m.free(page, 1);
  }
  REQUIRE(default_pool(s).changes_dropped);
  check_same(s, m, 0);
  s.pools_synchronized(0);
  m.sync();
  check_same(s, m, 1);
  CHECK(default_pool(s).footprint() == 64 * kPage);
  CHECK(!default_pool(s).changes_dropped);
  // And from there on, the changes are kept again.
  s.apply(event(HookId::cuMemFreeAsync, kBase, 0));
  m.free(0, 1);
  s.pools_synchronized(0);
  m.sync();
  check_same(s, m, 2);
}

TEST_CASE("pool trim: a freed block handed out in two halves, then a synchronize, keeps both halves") {
  LiveState s;
  s.apply(event(HookId::cuMemAllocAsync, kBase, 16 * kPage));
  s.apply(event(HookId::cuMemAllocAsync, kBase + 16 * kPage, 16 * kPage));
  s.pools_synchronized(0);
  s.apply(event(HookId::cuMemFreeAsync, kBase, 0));
  s.apply(event(HookId::cuMemAllocAsync, kBase, 8 * kPage));
  s.apply(event(HookId::cuMemAllocAsync, kBase + 8 * kPage, 4 * kPage));
  CHECK(default_pool(s).footprint() == 32 * kPage);
  s.pools_synchronized(0);  // the 4 pages between the second half and the next block go back
  CHECK(default_pool(s).footprint() == 28 * kPage);
  CHECK(default_pool(s).largest_free_gap(s) == 0);
  s.apply(event(HookId::cuMemFreeAsync, kBase + 16 * kPage, 0));
  CHECK(default_pool(s).largest_free_gap(s) == 16 * kPage);
  s.pools_synchronized(0);
  CHECK(default_pool(s).footprint() == 12 * kPage);
}
