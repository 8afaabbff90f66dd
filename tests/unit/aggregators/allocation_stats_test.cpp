// The allocation-statistics aggregator (`vramtrace summary`): counts and bytes of every
// successful allocation, frees counted once, the size histogram, and the largest allocations
// with when they were freed.
#include <catch2/catch.hpp>

#include "aggregators/allocation_stats.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

TEST_CASE("allocation stats: counts, bytes, frees, histogram and the largest with their frees") {
  Records rec;
  LiveState live;
  AllocationStatsAggregator agg(3);
  std::vector<Record> rs = {rec.alloc(0x1000, 512), rec.alloc(0x2000, 3 * 1024), rec.alloc(0x3000, 5 * MiB),
                            rec.alloc(0x4000, 5 * MiB), rec.alloc(0x5000, 1 * GiB), rec.free(0x3000),
                            rec.free(0x3000),  // a second free of the same address: not counted again
                            rec.free(0x9000),  // of nothing live
                            rec.alloc(0x6000, 2 * MiB)};
  for (const Record& r : rs) {
    agg.before(r, live);
    live.apply(r);
    agg.after(r, live);  // (a free is counted from what LiveState removed)
  }
  TraceReport rep;
  agg.finish(&rep);
  const AllocationStats& s = rep.allocations;
  CHECK(s.count == 6);
  CHECK(s.bytes == 512 + 3 * 1024 + 10 * MiB + 1 * GiB + 2 * MiB);
  CHECK(s.freed == 1);
  REQUIRE(s.largest.size() == 3);  // the three biggest, biggest first; ties in time order
  CHECK(s.largest[0].bytes == 1 * GiB);
  CHECK_FALSE(s.largest[0].freed);
  CHECK(s.largest[1].bytes == 5 * MiB);
  CHECK(s.largest[1].t_ns == rs[2].t_ns);
  CHECK(s.largest[1].freed);
  CHECK(s.largest[1].freed_t_ns == rs[5].t_ns);
  CHECK(s.largest[2].bytes == 5 * MiB);
  CHECK_FALSE(s.largest[2].freed);
  CHECK(s.largest[0].op == "cuMemAlloc_v2");
  // Buckets from the smallest to the largest non-empty one, powers of 4 from 1 KiB.
  REQUIRE(s.histogram.size() == 12);
  CHECK(s.histogram.front().min_bytes == 0);
  CHECK(s.histogram.front().max_bytes == 1024);
  CHECK(s.histogram.front().count == 1);
  CHECK(s.histogram[1].min_bytes == 1024);
  CHECK(s.histogram[1].count == 1);  // 3 KiB
  uint64_t n = 0, bytes = 0;
  for (const SizeBucket& b : s.histogram) n += b.count, bytes += b.bytes;
  CHECK(n == s.count);
  CHECK(bytes == s.bytes);
  CHECK(s.histogram.back().min_bytes == 1 * GiB);
  CHECK(s.histogram.back().max_bytes == 4 * GiB);
}

TEST_CASE("allocation stats: a failed call is no allocation, and nothing gives empty lists") {
  AllocationStatsAggregator agg;
  TraceReport rep;
  agg.finish(&rep);
  CHECK(rep.allocations.count == 0);
  CHECK(rep.allocations.histogram.empty());
  CHECK(rep.allocations.largest.empty());
}

TEST_CASE("allocation stats: a stream-ordered allocation captured into a graph is a graph node, no allocation (rule 8)") {
  Records rec;
  LiveState live;
  AllocationStatsAggregator agg;
  Record captured = rec.async(0x7000000, 6 * MiB);
  Records::set_aux2(captured, 1);  // the graph it was captured into
  Record captured_free = rec.free_async(0x7000000);
  Records::set_aux2(captured_free, 1);
  for (const Record& r : {captured, captured_free, rec.async(0x8000000, 2 * MiB)}) {
    agg.before(r, live);
    live.apply(r);
    agg.after(r, live);
  }
  TraceReport rep;
  agg.finish(&rep);
  CHECK(rep.allocations.count == 1);  // the uncaptured one only: the replay holds no memory for the other
  CHECK(rep.allocations.bytes == 2 * MiB);
  CHECK(rep.allocations.freed == 0);
  REQUIRE(rep.allocations.largest.size() == 1);
  CHECK(rep.allocations.largest[0].bytes == 2 * MiB);
}
