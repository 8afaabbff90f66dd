// Kernel activity read back, on records made by the production encoder from synthetic CUPTI
// structs (clock offset 0: CUPTI time = trace time): the report's answers at an instant (kernels
// running, the last ones before it, enclosing NVTX ranges), phases and the coverage cross-check,
// through ActivityStream and CoverageStream as the analysis uses them; NVTX pairing and nesting
// in the export's ActivityIndex; intercepted allocations; the recorder's status records.
#include <catch2/catch.hpp>

#include <map>
#include <tuple>

#include "activity_fixture.h"
#include "activity_format.h"
#include "activity_stream.h"
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

// The report's questions, asked the way the analysis asks them (activity_stream.h): a question
// at an instant is registered when the memory event is read, and the kernel records that answer
// it arrive later (CUPTI flushes its buffers after the fact).
namespace {

// Encoded records of `fill`, handed to `st` as written at record time `rt`.
template <typename F>
void feed(ActivityStream& st, uint64_t rt, F fill) {
  auto b = build(fill);
  for (const Record& r : b->sink.as_records(rt)) REQUIRE(st.add(r));
}

std::vector<std::string> names(const ActivityStream& st, const std::vector<KernelActivity>& v) {
  std::vector<std::string> out;
  for (const KernelActivity& k : v) out.push_back(st.display_name(k.name_id));
  return out;
}

}  // namespace

TEST_CASE("what ran at an instant: the kernels running then across streams, and the last ones started before it") {
  ActivityStream st(0);
  std::map<uint64_t, ActivityStream::QueryId> q;
  for (uint64_t t : {50, 100, 199, 200, 405, 420, 1000}) q[t] = st.watch(t);
  feed(st, 2000, [](synth::Builder& s) {
    s.kernel("_Z1av", 100, 200, 1, 1);
    s.kernel("_Z1bv", 150, 1000, 2, 2);  // long, on another stream
    s.kernel("_Z1cv", 210, 300, 1, 3);
    s.kernel("_Z1dv", 400, 450, 1, 4);
  });
  st.finish(3000);
  auto running = [&](uint64_t t) { return names(st, st.answer(q[t]).running); };
  auto last = [&](uint64_t t) { return names(st, st.answer(q[t]).last_before); };
  using V = std::vector<std::string>;
  CHECK(running(50).empty());
  CHECK(running(100) == V{"a()"});
  CHECK(running(199) == V{"a()", "b()"});
  CHECK(running(200) == V{"b()"});  // [start, end): a has ended
  CHECK(running(420) == V{"b()", "d()"});
  CHECK(running(1000).empty());
  CHECK(last(405) == V{"d()", "c()", "b()", "a()"});  // latest first
  CHECK(last(100).empty());                           // a starts at 100: not before it
  CHECK(last(1000) == V{"d()", "c()", "b()", "a()"});
}

TEST_CASE("NVTX ranges pair by id and nest per thread, and unended ranges run to the trace's end") {
  auto fill = [](synth::Builder& s) {
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
  };
  // The export's index: every range, paired, with its depth on its thread.
  auto b = build(fill, 1000);
  const ActivityIndex& ix = *b->index;
  std::vector<std::tuple<std::string, uint32_t, int, uint64_t, uint64_t, bool>> ranges;
  for (const NvtxRange& r : ix.nvtx_ranges()) ranges.emplace_back(r.name, r.thread, r.depth, r.start_ns, r.end_ns, r.open);
  using R = std::tuple<std::string, uint32_t, int, uint64_t, uint64_t, bool>;
  CHECK(ranges == std::vector<R>{R{"step", 1, 0, 0, 100, false}, R{"forward", 1, 1, 10, 20, false},
                                 R{"backward", 1, 1, 30, 90, false}, R{"allreduce", 1, 2, 40, 50, false},
                                 R{"step", 1, 0, 200, 300, false}, R{"loader", 2, 0, 5, 1000, true}});
  // The report's answer at an instant: the enclosing ranges, by thread, outermost first.
  ActivityStream st(0);
  ActivityStream::QueryId at45 = st.watch(45), at95 = st.watch(95), at999 = st.watch(999);
  feed(st, 1000, fill);
  st.finish(1000);
  CHECK(st.answer(at45).nvtx == std::vector<std::string>{"step", "backward", "allreduce", "loader"});
  CHECK(st.answer(at95).nvtx == std::vector<std::string>{"step", "loader"});
  CHECK(st.answer(at999).nvtx == std::vector<std::string>{"loader"});
}

TEST_CASE("phases: the peak device bytes within each top-level range, grouped by name") {
  constexpr uint64_t ms = 1'000'000;
  ActivityStream st(0);
  // Device bytes after each event (a sample per event, as the analysis gives them).
  const std::vector<std::pair<uint64_t, uint64_t>> samples = {{50, 1000},   {110, 5000}, {130, 9000},  {160, 4000},
                                                              {200, 50000}, {310, 7000}, {399, 12000}, {400, 3000}};
  for (const auto& [t, bytes] : samples) st.sample(t * ms, bytes);
  feed(st, 700 * ms, [](synth::Builder& s) {
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100 * ms, 1, "step");
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 120 * ms, 1, "forward");  // nested: not a phase
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 150 * ms, 1, nullptr);
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 200 * ms, 1, nullptr);  // the 50000 at 200 is after it
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 300 * ms, 1, "step");  // 50000 live as it begins
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 400 * ms, 1, nullptr);
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 500 * ms, 1, "eval");
    s.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 600 * ms, 1, nullptr);
  });
  st.finish(1000 * ms);
  std::vector<PhaseSummary> ph = st.phases();
  REQUIRE(ph.size() == 2);
  CHECK(ph[0].name == "step");
  CHECK(ph[0].count == 2);
  CHECK(ph[0].max_peak_bytes == 50000);  // what was live when the second began counts
  CHECK(ph[0].max_growth_bytes == 8000);  // 9000 - 1000 in the first
  CHECK(ph[1].name == "eval");
  CHECK(ph[1].count == 1);
  CHECK(ph[1].max_peak_bytes == 3000);
  CHECK(ph[1].max_growth_bytes == 0);
}

TEST_CASE("coverage: the CUPTI allocations interception matched, and the ones it missed") {
  auto cupti = [](bool alloc, uint64_t address, uint64_t bytes, uint64_t t) {
    CuptiAllocation m;
    m.operation = alloc ? vt::format::kCuptiMemoryAllocation : vt::format::kCuptiMemoryRelease;
    m.address = address;
    m.bytes = bytes;
    m.t_ns = t;
    return m;
  };
  CoverageStream cov;
  // In stream order: what interception saw at its time, CUPTI's records when they arrive.
  cov.intercepted({0x9000, 64, 10, 0});  // interception saw more (a pinned buffer CUPTI did not report)
  cov.intercepted({0x1000, 100, 1'000'300, 0});
  cov.intercepted({0x2000, 256, 2'000'100, 0});  // CUPTI says 200 bytes
  cov.intercepted({0x1000, 100, 5'000'200, 0});  // the address again, later
  cov.intercepted({0x4000, 400, 100'000'000, 0});
  cov.advance(200'000'000);
  for (const CuptiAllocation& m : {cupti(true, 0x1000, 100, 1'000'000), cupti(true, 0x2000, 200, 2'000'000),
                                   cupti(true, 0x3000, 300, 3'000'000),  // never intercepted
                                   cupti(false, 0x1000, 100, 4'000'000),  // releases are not counted
                                   cupti(true, 0x1000, 100, 5'000'000),
                                   cupti(true, 0x4000, 400, 900'000'000)})  // 0.8 s from its interception
    cov.cupti(m);
  cov.advance(2'000'000'000);
  cov.finish();
  const CoverageResult& c = cov.result();
  CHECK(c.cupti_allocations == 5);
  CHECK(c.matched == 3);
  CHECK(c.size_mismatches == 1);
  CHECK(c.fraction == Approx(0.6));
  REQUIRE(c.missed.size() == 2);
  CHECK(c.missed[0].address == 0x3000);
  CHECK(c.missed[1].address == 0x4000);
  CoverageStream none;
  none.intercepted({0x1000, 100, 1'000, 0});
  none.finish();
  CHECK(none.result().cupti_allocations == 0);
  CHECK(none.result().fraction == 1.0);
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
