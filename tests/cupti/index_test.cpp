// ActivityIndex queries, memory by NVTX phase and the coverage cross-check, on records made by
// the production encoder from synthetic CUPTI structs (clock offset 0: CUPTI time = trace time).
#include <catch2/catch.hpp>

#include "activity_fixture.h"
#include "activity_format.h"
#include "status_record.h"
#include "synthetic_buffer.h"

using namespace vt::analyzer;

namespace {

struct Built {
  actfix::MemorySink sink;
  std::unique_ptr<ActivityIndex> index;
};

// Encodes what `fill` adds to a buffer, then indexes it (trace base 0).
template <typename F>
std::unique_ptr<Built> build(F fill, uint64_t trace_end = 1'000'000) {
  auto b = std::make_unique<Built>();
  vt::cupti::ClockAlign clock;
  actfix::set_offset(&clock, 0);
  static vt::cupti::NameTable names;
  names.clear();
  vt::cupti::Encoder enc(0, &clock, &names, b->sink.sink());
  alignas(8) static uint8_t buf[1 << 16];
  synth::Builder sb{buf, sizeof buf};
  fill(sb);
  enc.decode_buffer(buf, sb.len, synth::next_record);
  b->index = std::make_unique<ActivityIndex>(0);
  for (const Record& r : b->sink.as_records()) b->index->add(r);
  b->index->finish(trace_end);
  return b;
}

}  // namespace

TEST_CASE("running_at and last_before find kernels across streams") {
  auto b = build([](synth::Builder& s) {
    s.kernel("_Z1av", 100, 200, 1, 1);
    s.kernel("_Z1bv", 150, 1000, 2, 2);  // long, on another stream
    s.kernel("_Z1cv", 210, 300, 1, 3);
    s.kernel("_Z1dv", 400, 450, 1, 4);
  });
  const ActivityIndex& ix = *b->index;
  auto at = [&](uint64_t t) {
    std::vector<std::string> v;
    for (const KernelActivity* k : ix.running_at(t)) v.push_back(ix.display_name(k->name_id));
    return v;
  };
  CHECK(at(50).empty());
  CHECK(at(100) == std::vector<std::string>{"a()"});
  CHECK(at(199) == std::vector<std::string>{"a()", "b()"});
  CHECK(at(200) == std::vector<std::string>{"b()"});  // [start, end): a has ended
  CHECK(at(420) == std::vector<std::string>{"b()", "d()"});
  CHECK(at(1000).empty());
  auto last = ix.last_before(405, 2);
  REQUIRE(last.size() == 2);
  CHECK(ix.display_name(last[0]->name_id) == "d()");
  CHECK(ix.display_name(last[1]->name_id) == "c()");
  CHECK(ix.last_before(100, 5).empty());
  CHECK(ix.last_before(5000, 10).size() == 4);
}

TEST_CASE("NVTX ranges pair by id and nest per thread, and unended ranges run to the trace's end") {
  auto b = build(
      [](synth::Builder& s) {
        const uint32_t A = 1, B = 2, S = CUPTI_ACTIVITY_FLAG_MARKER_START, E = CUPTI_ACTIVITY_FLAG_MARKER_END;
        s.marker(S, 1, 0, A, "step");
        s.marker(S, 2, 10, A, "forward");
        s.marker(E, 2, 20, A, nullptr);
        s.marker(S, 3, 30, A, "backward");
        s.marker(S, 4, 40, A, "allreduce");
        s.marker(E, 4, 50, A, nullptr);
        s.marker(E, 3, 90, A, nullptr);
        s.marker(E, 1, 100, A, nullptr);
        s.marker(S, 5, 5, B, "loader");  // never ended
        s.marker(S, 6, 200, A, "step");
        s.marker(E, 6, 300, A, nullptr);
      },
      1000);
  const ActivityIndex& ix = *b->index;
  REQUIRE(ix.nvtx_ranges().size() == 6);
  std::vector<std::string> at45;
  std::vector<int> depth45;
  for (const NvtxRange* r : ix.nvtx_at(45)) {
    at45.push_back(r->name);
    depth45.push_back(r->depth);
  }
  CHECK(at45 == std::vector<std::string>{"step", "backward", "allreduce", "loader"});
  CHECK(depth45 == std::vector<int>{0, 1, 2, 0});
  const NvtxRange* loader = ix.nvtx_at(45).back();
  CHECK(loader->open);
  CHECK(loader->end_ns == 1000);
  auto top = ix.top_level_ranges();
  REQUIRE(top.size() == 3);
  CHECK(top[0]->name == "step");
  CHECK(top[1]->name == "loader");
  CHECK(top[2]->name == "step");
}

TEST_CASE("memory by phase: the peak live bytes within each top-level range") {
  auto b = build(
      [](synth::Builder& s) {
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, 1, "step");
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 120, 1, "forward");  // nested: not a phase
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 150, 1, nullptr);
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 200, 1, nullptr);
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 300, 1, "step");
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 400, 1, nullptr);
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 500, 1, "eval");
        s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 600, 1, nullptr);
      },
      1000);
  std::vector<BytesPoint> timeline = {{50, 1000}, {110, 5000}, {130, 9000}, {160, 4000}, {200, 50000},
                                      {310, 7000}, {399, 12000}, {400, 3000}};
  auto peaks = memory_by_phase(b->index->top_level_ranges(), timeline);
  REQUIRE(peaks.size() == 3);
  CHECK(peaks[0].range->name == "step");
  CHECK(peaks[0].start_bytes == 1000);
  CHECK(peaks[0].peak_bytes == 9000);
  CHECK(peaks[0].peak_t_ns == 130);
  CHECK(peaks[0].end_bytes == 4000);  // the 50000 at t=200 is after the range ([100, 200))
  CHECK(peaks[1].start_bytes == 50000);
  CHECK(peaks[1].peak_bytes == 50000);  // what was live when it began counts
  CHECK(peaks[2].range->name == "eval");
  CHECK(peaks[2].peak_bytes == 3000);
  auto sum = summarize_phases(peaks);
  REQUIRE(sum.size() == 2);
  CHECK(sum[0].name == "step");
  CHECK(sum[0].count == 2);
  CHECK(sum[0].max_peak_bytes == 50000);
  CHECK(sum[0].max_growth_bytes == 8000);
  CHECK(sum[1].name == "eval");
}

TEST_CASE("coverage: the CUPTI allocations interception matched, and the ones it missed") {
  auto b = build([](synth::Builder& s) {
    s.memory(true, 0x1000, 100, 1'000'000);
    s.memory(true, 0x2000, 200, 2'000'000);
    s.memory(true, 0x3000, 300, 3'000'000);         // never intercepted
    s.memory(false, 0x1000, 100, 4'000'000);        // releases are not counted
    s.memory(true, 0x1000, 100, 5'000'000);         // the address again, later
    s.memory(true, 0x4000, 400, 900'000'000);       // intercepted, but 0.8 s away: not the same
  });
  std::vector<InterceptedAllocation> seen = {
      {0x1000, 100, 1'000'300, 0}, {0x2000, 256, 2'000'100, 0}, {0x1000, 100, 5'000'200, 0}, {0x4000, 400, 100'000'000, 0},
      {0x9000, 64, 10, 0},  // interception saw more (a pinned host buffer CUPTI did not report)
  };
  CoverageResult c = check_coverage(seen, b->index->cupti_memory());
  CHECK(c.cupti_allocations == 5);
  CHECK(c.matched == 3);
  CHECK(c.size_mismatches == 1);
  CHECK(c.fraction == Approx(0.6));
  REQUIRE(c.missed.size() == 2);
  CHECK(c.missed[0].address == 0x3000);
  CHECK(c.missed[1].address == 0x4000);
  CHECK(check_coverage(seen, {}).fraction == 1.0);
}

TEST_CASE("intercepted allocations are read from the memory events") {
  Record r;
  r.tag = 1;
  r.op = &vt::kOps[int(vt::HookId::cuMemAlloc_v2)];
  r.fields = vt::format::kEvAddr | vt::format::kEvSize;
  r.addr = 0xabc000;
  r.size = 4096;
  r.t_ns = 77;
  r.device = 1;
  InterceptedAllocation a;
  REQUIRE(intercepted_allocation(r, &a));
  CHECK(a.address == 0xabc000);
  CHECK(a.size == 4096);
  CHECK(a.device == 1);
  r.result = 2;  // failed: nothing was allocated
  CHECK_FALSE(intercepted_allocation(r, &a));
  r.result = 0;
  r.op = &vt::kOps[int(vt::HookId::cuMemFree_v2)];
  CHECK_FALSE(intercepted_allocation(r, &a));
  r.op = &vt::kOps[int(vt::HookId::cuMemAddressReserve)];  // address space, not memory
  CHECK_FALSE(intercepted_allocation(r, &a));
}

TEST_CASE("the recorder's status records summarise what happened") {
  uint8_t buf[256];
  std::vector<std::vector<uint8_t>> payloads;
  auto add = [&](uint8_t kind, uint64_t code, int64_t value, const char* text) {
    size_t n = vt::cupti::encode_status(kind, code, value, text, buf, sizeof buf);
    payloads.emplace_back(buf, buf + n);
  };
  namespace fmt = vt::format;
  add(fmt::kCuptiClock, 40, -123456789, "cuptiGetTimestamp");
  add(fmt::kCuptiStarted, 130001, fmt::kCuptiKindKernel | fmt::kCuptiKindNvtx, "/usr/local/cuda/lib64/libcupti.so.13");
  add(fmt::kCuptiDropped, fmt::kCuptiLostDropped, 12, "");
  add(fmt::kCuptiSteppedAside, 1, 987654321, "cuptiSubscribe");
  ActivityIndex ix(0);
  for (auto& p : payloads) {
    Record r;
    r.tag = fmt::kTagCuptiStatus;
    r.t_ns = 1'000'000'000;
    r.payload = p.data();
    r.payload_len = p.size();
    CHECK(ix.add(r));
  }
  ix.finish(0);
  RecorderState s = ix.recorder();
  CHECK(s.seen);
  CHECK(s.started);
  CHECK(s.version == 130001);
  CHECK(s.kinds == (fmt::kCuptiKindKernel | fmt::kCuptiKindNvtx));
  CHECK(s.library == "/usr/local/cuda/lib64/libcupti.so.13");
  CHECK(s.lost_records == 12);
  CHECK(s.clock_offset_ns == -123456789);
  CHECK(s.clock_window_ns == 40);
  CHECK(s.stepped_aside);
  CHECK(s.stepped_aside_ns == 987654321);
  CHECK(s.stepped_aside_for == "cuptiSubscribe");
  CHECK_FALSE(s.unavailable);
  CHECK(std::string(status_kind_name(fmt::kCuptiSteppedAside)) == "stepped_aside");
  CHECK(std::string(unavailable_reason_name(fmt::kCuptiWhyNotFound)) == "not_found");
  Record other;
  other.tag = 0x83;
  CHECK_FALSE(ix.add(other));
}
