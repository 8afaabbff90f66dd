// The caching-allocator model of `vramtrace whatif` (analyzer/whatif/allocator_model.h) on cases
// worked out by hand from PyTorch 2.6's rules, and PYTORCH_CUDA_ALLOC_CONF's parser on what PyTorch
// 2.6 itself accepts and refuses (its messages as it printed them). The whole model is checked
// against real PyTorch by tests/realtorch/whatif/whatif_check.py; these cases pin each rule.
#include <catch2/catch.hpp>

#include <string>

#include "alloc_conf.h"
#include "allocator_model.h"

using namespace vt::analyzer;

namespace {

constexpr uint64_t MiB = 1ull << 20;

AllocConf conf(const std::string& text) {
  AllocConf c;
  std::string err;
  REQUIRE(parse_alloc_conf(text, &c, &err));
  return c;
}

std::string refusal(const std::string& text) {
  AllocConf c;
  std::string err;
  if (parse_alloc_conf(text, &c, &err)) return "";
  return err;
}

}  // namespace

TEST_CASE("whatif: PYTORCH_CUDA_ALLOC_CONF is read as PyTorch 2.6 reads it") {
  CHECK(conf("").text.empty());
  CHECK(conf("expandable_segments:True").expandable_segments);
  CHECK(!conf("expandable_segments:False").expandable_segments);
  CHECK(conf("max_split_size_mb:64").max_split_size == 64 * MiB);
  CHECK(conf("max_split_size_mb:64MB").max_split_size == 64 * MiB);  // stoi stops at the first non-digit
  CHECK(conf(" max_split_size_mb : 128 ").max_split_size == 128 * MiB);  // spaces are dropped
  CHECK(conf("max_non_split_rounding_mb:64").max_non_split_rounding == 64 * MiB);
  CHECK(conf("garbage_collection_threshold:0.6").garbage_collection_threshold == Approx(0.6));
  CHECK(conf("backend:cudaMallocAsync").cuda_malloc_async);
  CHECK(conf("release_lock_on_cudamalloc:True").text == "release_lock_on_cudamalloc:True");

  AllocConf all = conf("roundup_power2_divisions:4");
  CHECK(all.divisions_for(3 * MiB) == 4);
  CHECK(all.divisions_for(100) == 4);
  // The list form: each interval (MiB, a power of 2) sets its index; the first also fills those
  // below it; ">" fills from the last one given (PyTorch overwrites that one too).
  AllocConf list = conf("roundup_power2_divisions:[256:1,512:2,>:8]");
  CHECK(list.divisions_for(1 * MiB) == 1);
  CHECK(list.divisions_for(300 * MiB) == 1);
  CHECK(list.divisions_for(600 * MiB) == 8);
  CHECK(list.divisions_for(4096 * MiB) == 8);
  AllocConf partial = conf("roundup_power2_divisions:[64:8,>:4]");
  CHECK(partial.divisions_for(32 * MiB) == 8);
  CHECK(partial.divisions_for(70 * MiB) == 4);

  CHECK(refusal("max_split_size_mb:20").find("too small, must be > 20") != std::string::npos);
  CHECK(refusal("max_non_split_rounding_mb:20").find("too small, must be > 20") != std::string::npos);
  CHECK(refusal("garbage_collection_threshold:0").find("too small") != std::string::npos);
  CHECK(refusal("garbage_collection_threshold:1.0").find("too big") != std::string::npos);
  CHECK(refusal("roundup_power2_divisions:3").find("power of 2") != std::string::npos);
  CHECK(refusal("roundup_power2_divisions:[300:2]").find("intervals have to be power of 2") != std::string::npos);
  CHECK(refusal("expandable_segments:true").find("True/False") != std::string::npos);
  CHECK(refusal("foo:1").find("Unrecognized CachingAllocator option: foo") != std::string::npos);
  CHECK(refusal("expandable_segments:True,,max_split_size_mb:64").find("Unrecognized CachingAllocator option: ,") !=
        std::string::npos);
  CHECK(refusal("max_split_size_mb").find("expected ':'") != std::string::npos);
  CHECK(refusal("backend:other").find("Unknown allocator backend") != std::string::npos);
}

TEST_CASE("whatif model: pools, segment sizes, rounding and splitting") {
  CachingAllocatorModel m(conf(""), 1024 * MiB, 0, nullptr);
  uint64_t small = m.malloc(1000);  // 1024 B from a 2 MiB small segment
  CHECK(m.block_size(small) == 1024);
  CHECK(m.stats().reserved == 2 * MiB);
  uint64_t a = m.malloc(5 * MiB);  // 1-10 MiB: a 20 MiB segment, split
  uint64_t b = m.malloc(5 * MiB);  // the rest of it
  CHECK(m.stats().reserved == 22 * MiB);
  CHECK(m.stats().segments_allocated == 2);
  // >= 10 MiB: its own segment, rounded to 2 MiB; the 1 MiB - 512 B left over is not split off.
  uint64_t big = m.malloc(11 * MiB + 1);
  CHECK(m.block_size(big) == 12 * MiB);
  CHECK(m.stats().reserved == 34 * MiB);
  m.free(big);
  uint64_t again = m.malloc(11 * MiB);  // the free 12 MiB block, whole again
  CHECK(m.block_size(again) == 12 * MiB);
  CHECK(m.stats().allocated == 1024 + 10 * MiB + 12 * MiB);
  m.free(a);
  m.free(b);  // the two halves merge back into one 20 MiB block
  CHECK(m.largest_free_block() == 20 * MiB);
  m.empty_cache();
  CHECK(m.stats().reserved == 2 * MiB + 12 * MiB);  // the small segment and the 12 MiB one are in use
  CHECK(m.stats().peak_reserved == 34 * MiB);
}

TEST_CASE("whatif model: a miss empties the cache and retries, and what still cannot fit is an OOM") {
  CachingAllocatorModel m(conf(""), 100 * MiB, 0, nullptr);
  m.free(m.malloc(60 * MiB));
  uint64_t h = m.malloc(80 * MiB);  // 60 cached + 80 > 100: the cached segment goes, then it fits
  CHECK(h != 0);
  CHECK(m.stats().flushes == 1);
  CHECK(m.stats().reserved == 80 * MiB);
  CHECK(m.malloc(30 * MiB) == 0);
  CHECK(m.stats().ooms == 1);
  CHECK(m.stats().flushes == 2);
}

TEST_CASE("whatif model: memory held outside PyTorch counts against the device") {
  uint64_t others = 50 * MiB;
  CachingAllocatorModel m(conf(""), 100 * MiB, 0, [&] { return others; });
  CHECK(m.malloc(60 * MiB) == 0);
  others = 30 * MiB;
  CHECK(m.malloc(60 * MiB) != 0);
}

TEST_CASE("whatif model: max_split_size_mb keeps oversize blocks whole and frees them first") {
  CachingAllocatorModel m(conf("max_split_size_mb:32"), 1024 * MiB, 0, nullptr);
  m.free(m.malloc(40 * MiB));
  uint64_t h = m.malloc(12 * MiB);  // below the limit: an oversize cached block is not used
  CHECK(m.block_size(h) == 12 * MiB);
  CHECK(m.stats().reserved == 52 * MiB);
  uint64_t o = m.malloc(39 * MiB);  // within max_non_split_rounding (20 MiB) of 40: taken whole
  CHECK(m.block_size(o) == 40 * MiB);
  CHECK(m.stats().reserved == 52 * MiB);
  m.free(o);
  // 30 MiB cannot fit beside 12 + 40 in 80: the oversize 40 MiB block alone is released (one
  // large enough), without a flush.
  CachingAllocatorModel n(conf("max_split_size_mb:32"), 80 * MiB, 0, nullptr);
  uint64_t keep = n.malloc(12 * MiB);
  n.free(n.malloc(40 * MiB));
  CHECK(n.malloc(30 * MiB) != 0);
  CHECK(n.stats().flushes == 0);
  CHECK(n.stats().reserved == 42 * MiB);
  // Several oversize blocks that add up to less than the request: released, then the flush.
  CachingAllocatorModel q(conf("max_split_size_mb:32"), 100 * MiB, 0, nullptr);
  uint64_t kept = q.malloc(12 * MiB);
  q.free(q.malloc(40 * MiB));
  CHECK(q.malloc(60 * MiB) != 0);
  CHECK(q.stats().flushes == 1);
  CHECK(q.stats().reserved == 72 * MiB);
  n.free(keep);
  q.free(kept);
}

TEST_CASE("whatif model: expandable segments map pages as needed and unmap free ones on a flush") {
  CachingAllocatorModel m(conf("expandable_segments:True"), 1024 * MiB, 0, nullptr);
  uint64_t a = m.malloc(5 * MiB);
  CHECK(m.stats().reserved == 20 * MiB);  // one 20 MiB page of the large pool
  uint64_t b = m.malloc(30 * MiB);        // 15 MiB left after a: one more page, contiguous
  CHECK(m.stats().reserved == 40 * MiB);
  CHECK(m.block_size(b) == 30 * MiB);
  uint64_t s = m.malloc(4096);  // the small pool: 2 MiB pages
  CHECK(m.stats().reserved == 42 * MiB);
  m.free(a);
  m.free(b);
  m.empty_cache();
  CHECK(m.stats().reserved == 2 * MiB);
  m.free(s);
  m.empty_cache();
  CHECK(m.stats().reserved == 0);
}

TEST_CASE("whatif model: roundup_power2_divisions rounds requests up to the next division") {
  CachingAllocatorModel m(conf("roundup_power2_divisions:4"), 1024 * MiB, 0, nullptr);
  CHECK(m.block_size(m.malloc(3000)) == 3072);          // 2048 + 512
  CHECK(m.block_size(m.malloc(5 * MiB + 1)) == 6 * MiB);  // 4 MiB + 1 MiB steps
  CHECK(m.block_size(m.malloc(2000)) == 2048);          // not above 512 * 4: plain 512 B rounding
}

TEST_CASE("whatif model: garbage_collection_threshold acts only under a memory fraction, oldest first") {
  // 40 then 46 MiB cached (the 40 older), then 50 MiB asked: reserved 86 > 0.5 * 100, so the
  // collector frees blocks at least as old as the average: the 40 MiB one, enough; 46 + 50 fits.
  auto run = [](double fraction) {
    CachingAllocatorModel m(conf("garbage_collection_threshold:0.5"), 100 * MiB, fraction, nullptr);
    m.free(m.malloc(40 * MiB));
    m.free(m.malloc(45 * MiB));
    CHECK(m.malloc(50 * MiB) != 0);
    return m.stats();
  };
  CachingAllocatorModel::Stats with = run(1.0), without = run(0);
  CHECK(with.reserved == 96 * MiB);
  CHECK(with.flushes == 0);
  CHECK(without.reserved == 50 * MiB);  // no fraction: no collector, the miss flushes everything
  CHECK(without.flushes == 1);
}

// PyTorch keeps a pool per stream: a block cached for one stream never serves another, a miss on
// a stream frees only that stream's oversize blocks before the flush, and expandable segments are
// per stream too.
TEST_CASE("whatif model: each stream has its own cached blocks") {
  constexpr uint64_t kSide = 0x5000;
  CachingAllocatorModel m(conf(""), 1024 * MiB, 0, nullptr);
  uint64_t a = m.malloc(12 * MiB);  // the default stream: a 12 MiB segment
  m.free(a);
  uint64_t b = m.malloc(12 * MiB, kSide);  // the side stream cannot take it: a segment of its own
  CHECK(m.stats().reserved == 24 * MiB);
  CHECK(m.stats().segments_allocated == 2);
  uint64_t c = m.malloc(12 * MiB);  // the default stream takes its own cached block back
  CHECK(m.stats().segments_allocated == 2);
  CHECK(m.largest_free_block() == 0);
  m.free(b);
  m.free(c);
  CHECK(m.largest_free_block() == 12 * MiB);  // (over both streams' blocks)
  uint64_t small = m.malloc(1000, kSide);  // small pool: a new 2 MiB segment for the side stream
  uint64_t small2 = m.malloc(1000);        // and one for the default stream
  CHECK(m.stats().reserved == 28 * MiB);
  m.free(small);
  m.free(small2);

  CachingAllocatorModel e(conf("expandable_segments:True"), 1024 * MiB, 0, nullptr);
  uint64_t x = e.malloc(4 * MiB);
  uint64_t y = e.malloc(4 * MiB, kSide);  // the default stream's mapped page is not the side stream's
  CHECK(e.stats().reserved == 40 * MiB);  // a 20 MiB page each
  uint64_t z = e.malloc(4 * MiB, kSide);  // the side stream's page has room
  CHECK(e.stats().reserved == 40 * MiB);
  e.free(x);
  e.free(y);
  e.free(z);
  e.empty_cache();
  CHECK(e.stats().reserved == 0);
}
