// The regions aggregator through the pass: device bytes (all devices) at a region's start and end
// and the most inside it, nesting by name, regions never ended, marks that say nothing.
#include <catch2/catch.hpp>

#include "analysis_pass.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

TraceReport run(const std::vector<Record>& records) {
  AnalysisPass pass(ProcessInfo{}, AnalysisOptions{});
  for (const Record& r : records) pass.feed(r);
  TraceReport rep;
  pass.finish(&rep);
  return rep;
}

}  // namespace

TEST_CASE("regions aggregator: bytes at the start and end, the most inside, all devices") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.alloc(0x1000000, 1 * MiB));
  Record b = rec.begin("step");
  v.push_back(b);
  v.push_back(rec.alloc(0x2000000, 4 * MiB));
  rec.device = 1;
  v.push_back(rec.alloc(0x3000000, 2 * MiB));
  v.push_back(rec.free(0x3000000));
  rec.device = 0;
  v.push_back(rec.free(0x2000000));
  Record e = rec.end("step");
  v.push_back(e);
  v.push_back(rec.alloc(0x4000000, 64 * MiB));  // after the region
  TraceReport rep = run(v);
  REQUIRE(rep.regions.size() == 1);
  const RegionReport& g = rep.regions[0];
  CHECK(g.name == "step");
  CHECK(g.closed);
  CHECK(g.t_begin == b.t_ns);
  CHECK(g.t_end == e.t_ns);
  CHECK(g.start_bytes == 1 * MiB);
  CHECK(g.peak_bytes == 7 * MiB);
  CHECK(g.end_bytes == 1 * MiB);
}

TEST_CASE("regions aggregator: an end closes the latest open region of its name, one never ended ends with the trace") {
  Records rec;
  std::vector<Record> v;
  v.push_back(rec.begin("outer"));
  v.push_back(rec.begin("test"));
  v.push_back(rec.alloc(0x1000000, 2 * MiB));
  v.push_back(rec.begin("test"));
  v.push_back(rec.alloc(0x2000000, 3 * MiB));
  v.push_back(rec.end("test"));   // the second "test"
  v.push_back(rec.end("nobody"));  // no such region open: nothing
  Record last = rec.free(0x2000000);
  v.push_back(last);
  TraceReport rep = run(v);
  REQUIRE(rep.regions.size() == 3);
  CHECK(rep.regions[0].name == "outer");
  CHECK_FALSE(rep.regions[0].closed);
  CHECK(rep.regions[0].t_end == last.t_ns);
  CHECK(rep.regions[0].peak_bytes == 5 * MiB);
  CHECK(rep.regions[0].end_bytes == 2 * MiB);
  CHECK_FALSE(rep.regions[1].closed);
  CHECK(rep.regions[1].start_bytes == 0);
  CHECK(rep.regions[2].closed);
  CHECK(rep.regions[2].start_bytes == 2 * MiB);
  CHECK(rep.regions[2].peak_bytes == 5 * MiB);
}

TEST_CASE("regions: a damaged mark or one of a kind this reader does not know is skipped") {
  Records rec;
  RegionMark m;
  CHECK(decode_region(rec.begin("a"), &m));
  CHECK(m.begin);
  CHECK(m.name == "a");
  CHECK(decode_region(rec.end("a"), &m));
  CHECK_FALSE(m.begin);
  CHECK_FALSE(decode_region(rec.region(7, "a"), &m));
  Record cut = rec.begin("abc");
  cut.payload_len -= 1;
  CHECK_FALSE(decode_region(cut, &m));
  std::vector<Record> v = {rec.region(7, "x"), cut};
  CHECK(run(v).regions.empty());
}
