// ActivityStream and CoverageStream, the report's one pass over kernel activity: records written
// after the memory events they explain (CUPTI batches them), answers equal to their definitions
// (activity_stream.h) computed directly from what the test generated, and memory that stays bounded however
// many records go through. Records are made by the production encoder from synthetic CUPTI
// structs (clock offset 0: CUPTI time = trace time).
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <random>

#include "activity_fixture.h"
#include "activity_format.h"
#include "activity_stream.h"
#include "analysis.h"
#include "recorder.h"
#include "status_record.h"
#include "synthetic_buffer.h"
#include "trace_fixture.h"

using namespace vt::analyzer;
namespace fmt = vt::format;

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kStart = CUPTI_ACTIVITY_FLAG_MARKER_START, kEnd = CUPTI_ACTIVITY_FLAG_MARKER_END;

// Encodes single CUPTI records into trace records, each handed to `out` with the record time set.
struct Encode {
  vt::cupti::ClockAlign clock;
  vt::cupti::NameTable names;
  std::function<void(uint8_t, const uint8_t*, size_t)> out;
  vt::cupti::Encoder enc;
  alignas(8) uint8_t buf[1024];

  explicit Encode(std::function<void(uint8_t, const uint8_t*, size_t)> o, uint64_t base = 0)
      : out(std::move(o)), enc(base, &clock, &names, {write, this}) {
    actfix::set_offset(&clock, 0);
  }
  static void write(void* self, uint8_t tag, const uint8_t* p, size_t n) { static_cast<Encode*>(self)->out(tag, p, n); }
  synth::Builder builder() { return synth::Builder{buf, sizeof buf}; }
  void flush(const synth::Builder& b) { enc.decode_buffer(buf, b.len, synth::next_record); }
  void kernel(const char* name, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr = 1) {
    auto b = builder();
    b.kernel(name, start, end, stream, corr);
    flush(b);
  }
  void marker(uint32_t flags, uint32_t id, uint64_t t, uint32_t thread, const char* name) {
    auto b = builder();
    b.marker(flags, id, t, thread, name);
    flush(b);
  }
  void memory(bool alloc, uint64_t address, uint64_t bytes, uint64_t t) {
    auto b = builder();
    b.memory(alloc, address, bytes, t);
    flush(b);
  }
};

std::vector<std::string> names_of(const ActivityStream& s, const std::vector<KernelActivity>& v) {
  std::vector<std::string> out;
  for (const KernelActivity& k : v) out.push_back(s.display_name(k.name_id));
  return out;
}

// What the test generated, to compute the answers from by their definitions (activity_stream.h).
struct Truth {
  struct Kernel {
    std::string name;  // as displayed (demangled)
    uint64_t start, end;
  };
  struct Range {
    std::string name;
    uint32_t thread;
    uint64_t start, end;  // end: the trace's end when it never ended
    bool open;
  };
  std::vector<Kernel> kernels;
  std::vector<Range> ranges;
  std::vector<BytesPoint> timeline;
  std::vector<InterceptedAllocation> intercepted;
  std::vector<CuptiAllocation> cupti;  // in the order the stream is given them

  std::vector<std::string> running_at(uint64_t t) const {
    std::vector<const Kernel*> v;
    for (const Kernel& k : kernels)
      if (k.start <= t && t < k.end) v.push_back(&k);
    std::stable_sort(v.begin(), v.end(), [](const Kernel* a, const Kernel* b) { return a->start < b->start; });
    std::vector<std::string> out;
    for (const Kernel* k : v) out.push_back(k->name);
    return out;
  }
  std::vector<std::string> last_before(uint64_t t, size_t n) const {
    std::vector<const Kernel*> v;
    for (const Kernel& k : kernels)
      if (k.start < t) v.push_back(&k);
    std::stable_sort(v.begin(), v.end(), [](const Kernel* a, const Kernel* b) { return a->start > b->start; });
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size() && i < n; ++i) out.push_back(v[i]->name);
    return out;
  }
  // By thread, outermost first (at one start the longer is outside).
  std::vector<const Range*> sorted_ranges() const {
    std::vector<const Range*> v;
    for (const Range& r : ranges) v.push_back(&r);
    std::sort(v.begin(), v.end(), [](const Range* a, const Range* b) {
      if (a->thread != b->thread) return a->thread < b->thread;
      if (a->start != b->start) return a->start < b->start;
      return a->end > b->end;
    });
    return v;
  }
  std::vector<std::string> nvtx_at(uint64_t t) const {
    std::vector<std::string> out;
    for (const Range* r : sorted_ranges())
      if (r->start <= t && t < r->end) out.push_back(r->name);
    return out;
  }
  // Top-level ranges (nothing open on their thread as they start), their peak within
  // [start, end) counting what was live at the start, grouped by name.
  std::vector<PhaseSummary> phases() const {
    auto level_at = [&](uint64_t t) {
      uint64_t v = 0;
      for (const BytesPoint& p : timeline)
        if (p.t_ns <= t) v = p.bytes;
      return v;
    };
    std::map<std::string, PhaseSummary> by;
    std::vector<const Range*> v = sorted_ranges();
    for (size_t i = 0; i < v.size(); ++i) {
      bool inside = false;
      for (size_t j = 0; j < i; ++j)
        if (v[j]->thread == v[i]->thread && v[j]->end > v[i]->start) inside = true;
      if (inside) continue;
      uint64_t start = level_at(v[i]->start), peak = start;
      for (const BytesPoint& p : timeline)
        if (p.t_ns > v[i]->start && p.t_ns < v[i]->end) peak = std::max(peak, p.bytes);
      PhaseSummary& s = by[v[i]->name];
      s.name = v[i]->name;
      s.count++;
      s.max_peak_bytes = std::max(s.max_peak_bytes, peak);
      s.max_growth_bytes = std::max(s.max_growth_bytes, peak - start);
    }
    std::vector<PhaseSummary> out;
    for (auto& [name, s] : by) out.push_back(s);
    std::sort(out.begin(), out.end(), [](const PhaseSummary& a, const PhaseSummary& b) {
      return a.max_peak_bytes != b.max_peak_bytes ? a.max_peak_bytes > b.max_peak_bytes : a.name < b.name;
    });
    return out;
  }
  // Each CUPTI allocation in CUPTI time order (ties: as given) takes the unmatched intercepted one
  // at its address closest in time within the skew (the earliest of equals).
  CoverageResult coverage(uint64_t max_skew_ns) const {
    CoverageResult res;
    std::vector<const CuptiAllocation*> order;
    for (const CuptiAllocation& c : cupti)
      if (!c.release()) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [](const CuptiAllocation* a, const CuptiAllocation* b) { return a->t_ns < b->t_ns; });
    std::vector<const InterceptedAllocation*> seen;
    for (const InterceptedAllocation& a : intercepted) seen.push_back(&a);
    std::stable_sort(seen.begin(), seen.end(), [](const InterceptedAllocation* a, const InterceptedAllocation* b) { return a->t_ns < b->t_ns; });
    std::vector<bool> used(seen.size());
    for (const CuptiAllocation* c : order) {
      res.cupti_allocations++;
      size_t best = SIZE_MAX;
      uint64_t best_skew = 0;
      for (size_t i = 0; i < seen.size(); ++i) {
        if (used[i] || seen[i]->address != c->address) continue;
        uint64_t skew = seen[i]->t_ns > c->t_ns ? seen[i]->t_ns - c->t_ns : c->t_ns - seen[i]->t_ns;
        if (skew <= max_skew_ns && (best == SIZE_MAX || skew < best_skew)) best = i, best_skew = skew;
      }
      if (best == SIZE_MAX) {
        res.missed.push_back(*c);
        continue;
      }
      used[best] = true;
      res.matched++;
      if (seen[best]->size != c->bytes) res.size_mismatches++;
    }
    res.fraction = res.cupti_allocations ? double(res.matched) / double(res.cupti_allocations) : 1.0;
    return res;
  }
};

// Everything a stream is fed, stamped with the time it arrives (its record time).
struct Arrival {
  enum Kind { kRecord, kSample, kWatch, kMove, kIntercepted } kind = kRecord;
  uint64_t rt = 0;
  size_t seq = 0;
  uint8_t tag = 0;
  std::vector<uint8_t> payload;
  uint64_t t = 0, bytes = 0;
  size_t query = 0;  // the test's query number (kWatch, kMove)
  InterceptedAllocation alloc;
};

Record record_of(const Arrival& a) {
  Record r;
  r.tag = a.tag;
  r.t_ns = a.rt;
  r.payload = a.payload.data();
  r.payload_len = a.payload.size();
  return r;
}

}  // namespace

// A trace as the recorder writes it: memory events first, the activity of the same instants
// ~80 ms later (one CUPTI flush), a long kernel's record only after it ended.
TEST_CASE("the peak and an OOM are answered from kernel records written after them") {
  std::string path = fixture::temp_dir() + "/late.trace";
  const uint64_t kA = 0x7f0000000000ull, kB = 0x7f0000100000ull, kC = 0x7f0000200000ull, kNever = 0x7f00dead0000ull;
  int status = fixture::write_trace(path, [&] {
    uint64_t t0 = vt::now_ns();
    auto event = [](vt::HookId op, uint64_t t, uint64_t addr, uint64_t size, int32_t result = 0) {
      vt::Event e;
      e.set_op(op);
      e.t_ns = t;
      e.device = 0;
      e.result = result;
      if (addr) e.set_addr(addr);
      if (size) e.set_size(size);
      if (result) {
        e.free_bytes = 1 << 20;
        e.total_bytes = 1ull << 34;
      }
      vt::record(e);
    };
    event(vt::HookId::cuMemAlloc_v2, t0, kC, 4096);  // opens the trace (before CUPTI started)
    uint64_t base = actfix::trace_base(), write_at = t0;
    uint8_t sbuf[256];
    size_t n = vt::cupti::encode_status(fmt::kCuptiStarted, 130001, fmt::kCuptiKindKernel, "libcupti.so.13", sbuf, sizeof sbuf);
    vt::write_meta(fmt::kTagCuptiStatus, sbuf, n, t0);
    event(vt::HookId::cuMemAlloc_v2, t0 + 1 * kMs, kA, 1 << 20);
    event(vt::HookId::cuMemAlloc_v2, t0 + 10 * kMs, kB, 2 << 20);                 // 3 MiB: the peak
    event(vt::HookId::cuMemFree_v2, t0 + 30 * kMs, kB, 0);
    event(vt::HookId::cuMemAlloc_v2, t0 + 40 * kMs, 0, 1ull << 40, 2);             // OOM
    event(vt::HookId::cuMemFree_v2, t0 + 50 * kMs, kA, 0);
    Encode enc([&](uint8_t tag, const uint8_t* p, size_t len) { vt::write_meta(tag, p, len, write_at); }, base);
    write_at = t0 + 80 * kMs;  // CUPTI's buffer of [t0, t0 + 60 ms) is flushed
    enc.marker(kStart, 1, t0 + 1 * kMs, 7, "step");
    enc.kernel("_Z6beforev", t0 + 5 * kMs, t0 + 9 * kMs, 1);
    enc.kernel("_Z4peakv", t0 + 8 * kMs, t0 + 15 * kMs, 1);
    enc.kernel("_Z3oomv", t0 + 35 * kMs, t0 + 45 * kMs, 1);
    enc.memory(true, kA, 1 << 20, t0 + 1 * kMs + 1000);  // interception saw it
    enc.memory(true, kB, 2 << 20, t0 + 10 * kMs - 500);  // and this one (CUPTI stamped it first)
    enc.memory(true, kNever, 4096, t0 + 20 * kMs);     // but not this
    enc.marker(kEnd, 1, t0 + 60 * kMs, 7, nullptr);
    write_at = t0 + 2100 * kMs;
    enc.kernel("_Z4longv", t0 + 2 * kMs, t0 + 2000 * kMs, 2);  // ran through both
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  TraceReport rep;
  std::string err;
  REQUIRE(analyze_trace(path, AnalysisOptions{}, &rep, &err));
  auto names = [](const std::vector<KernelRef>& v) {
    std::vector<std::string> out;
    for (const KernelRef& k : v) out.push_back(k.name);
    return out;
  };
  REQUIRE(rep.peaks.size() == 1);
  REQUIRE(rep.ooms.size() == 1);
  const ActivityAt& peak = rep.peaks[0].activity;
  CHECK(names(peak.running) == std::vector<std::string>{"long()", "peak()"});
  CHECK(names(peak.last_before) == std::vector<std::string>{"peak()", "before()", "long()"});
  CHECK(peak.nvtx == std::vector<std::string>{"step"});
  const ActivityAt& oom = rep.ooms[0].activity;
  CHECK(names(oom.running) == std::vector<std::string>{"long()", "oom()"});
  CHECK(names(oom.last_before) == std::vector<std::string>{"oom()", "peak()", "before()", "long()"});
  CHECK(oom.nvtx == std::vector<std::string>{"step"});
  CHECK(rep.kernels.kernels == 4);
  CHECK(rep.kernels.cupti_allocations == 3);
  CHECK(rep.kernels.matched == 2);
  CHECK(rep.kernels.missed == std::vector<std::string>{"0x7f00dead0000 4096 bytes"});
  REQUIRE(rep.phases.size() == 1);
  CHECK(rep.phases[0].name == "step");
  CHECK(rep.phases[0].count == 1);
  CHECK(rep.phases[0].max_peak_bytes == (3 << 20) + 4096);
  CHECK(rep.phases[0].max_growth_bytes == 2 << 20);

}

// Random kernels, nested NVTX ranges on two threads, memory samples, queries that stay put (OOMs)
// and queries that move (a device's rising peak), CUPTI allocations: all fed in record-time order
// with lags up to 300 ms; every answer must equal the batch definitions' on the same records.
TEST_CASE("streamed answers equal the definitions computed from what was generated") {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4));
  Truth truth;
  std::vector<size_t> open_ranges;                             // in truth.ranges
  std::vector<std::pair<uint64_t, CuptiAllocation>> cupti_sent;  // (record time, record)
  auto rnd = [&](uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); };
  const uint64_t T0 = 1'000'000'000'000ull, span = 30'000 * kMs;
  std::vector<Arrival> in;
  auto add = [&](Arrival a) {
    a.seq = in.size();
    in.push_back(std::move(a));
  };
  uint64_t rt = 0;  // record time for what the encoder writes next
  Encode enc([&](uint8_t tag, const uint8_t* p, size_t n) {
    Arrival a;
    a.rt = rt;
    a.tag = tag;
    a.payload.assign(p, p + n);
    add(std::move(a));
  });
  // Kernels: mostly short, some running for seconds; records 0..300 ms after they end.
  static const char* const kNames[] = {"_Z4gemmv", "_Z4reluv", "_Z7softmaxv", "_Z9allreducev"};
  uint64_t start = T0;
  for (int i = 0; i < 6000; ++i) {
    start += rnd(1, 3 * kMs);
    uint64_t dur = rnd(0, 9) == 0 ? rnd(kMs, 3000 * kMs) : rnd(1000, 2 * kMs);
    rt = start + dur + rnd(0, 300 * kMs);
    const char* name = kNames[rnd(0, 3)];
    enc.kernel(name, start, start + dur, uint32_t(rnd(1, 4)), uint32_t(i));
    truth.kernels.push_back({demangle(name), start, start + dur});
  }
  // NVTX: per thread, top-level ranges with up to two nested ones; records in time order per
  // thread; some zero-length; the last range of thread 2 never ends.
  uint32_t id = 1;
  const char* const kPhases[] = {"forward", "backward", "optimizer"};
  for (uint32_t thread : {11u, 12u}) {
    uint64_t c = T0 + thread, last_rt = 0;
    auto mark = [&](uint32_t flags, uint32_t mid, uint64_t t, const char* name) {
      last_rt = rt = std::max(last_rt, t + rnd(0, 300 * kMs));
      enc.marker(flags, mid, t, thread, name);
    };
    while (c < T0 + span) {
      uint32_t top = id++;
      uint64_t s = c + rnd(1, 40 * kMs);
      const char* phase = kPhases[rnd(0, 2)];
      mark(kStart, top, s, phase);
      uint64_t inner = s;
      for (uint64_t k = rnd(0, 2); k > 0; --k) {
        uint32_t child = id++;
        // (Starts and ends strictly inside: two ranges sharing both ends on one thread have no
        // defined nesting order.)
        uint64_t cs = inner + rnd(1, 20 * kMs), ce = rnd(0, 5) == 0 ? cs : cs + rnd(1, 50 * kMs);
        mark(kStart, child, cs, "inner");
        mark(kEnd, child, ce, nullptr);
        truth.ranges.push_back({"inner", thread, cs, ce, false});
        inner = ce;
      }
      c = inner + rnd(1, 100 * kMs);
      if (thread == 12 && c >= T0 + span) {  // never ends
        open_ranges.push_back(truth.ranges.size());
        truth.ranges.push_back({phase, thread, s, 0, true});
        break;
      }
      mark(kEnd, top, c, nullptr);
      truth.ranges.push_back({phase, thread, s, c, false});
    }
  }
  // Memory: samples >= 1 ms apart (one per timeline bucket); OOM queries; each device's peak
  // query moving as it rises; allocations seen by interception and by CUPTI (some reused
  // addresses, some skewed past 50 ms, some CUPTI-only).
  std::vector<BytesPoint>& timeline = truth.timeline;
  std::vector<uint64_t> query_t;
  std::vector<InterceptedAllocation>& intercepted = truth.intercepted;
  size_t moving[2] = {SIZE_MAX, SIZE_MAX};
  uint64_t high[2] = {0, 0};
  uint64_t t = T0 + kMs;
  for (int i = 0; t < T0 + span; ++i, t += kMs + rnd(100'000, 2 * kMs)) {
    Arrival s;
    s.kind = Arrival::kSample;
    s.rt = s.t = t;
    s.bytes = rnd(1, 100) << 26;
    timeline.push_back({t, s.bytes});
    add(s);
    if (rnd(0, 400) == 0) {
      Arrival w;
      w.kind = Arrival::kWatch;
      w.rt = w.t = t;
      w.query = query_t.size();
      query_t.push_back(t);
      add(w);
    }
    int dev = int(rnd(0, 1));
    uint64_t level = rnd(0, 1'000'000);
    if (level > high[dev]) {
      high[dev] = level;
      Arrival m;
      m.kind = moving[dev] == SIZE_MAX ? Arrival::kWatch : Arrival::kMove;
      if (moving[dev] == SIZE_MAX) {
        moving[dev] = query_t.size();
        query_t.push_back(0);
      }
      m.query = moving[dev];
      m.rt = m.t = query_t[moving[dev]] = t;
      add(m);
    }
    if (rnd(0, 20) == 0) {
      uint64_t address = 0x7f0000000000ull + (rnd(0, 30) << 20);
      InterceptedAllocation a{address, rnd(1, 4) << 20, t, 0};
      bool seen = rnd(0, 9) != 0, cupti = rnd(0, 9) != 0;
      if (seen) {
        Arrival ia;
        ia.kind = Arrival::kIntercepted;
        ia.rt = t;
        ia.alloc = a;
        intercepted.push_back(a);
        add(ia);
      }
      if (cupti) {
        uint64_t skew = rnd(0, 9) == 0 ? rnd(50 * kMs + 1, 80 * kMs) : rnd(0, 40 * kMs);
        uint64_t ct = rnd(0, 1) ? t + skew : t - skew;
        rt = std::max(t, ct) + rnd(0, 300 * kMs);
        CuptiAllocation m;
        m.address = address;
        m.bytes = rnd(0, 5) == 0 ? a.size + 4096 : a.size;
        m.t_ns = ct;
        enc.memory(true, address, m.bytes, ct);
        cupti_sent.push_back({rt, m});
      }
    }
  }
  const uint64_t trace_end = timeline.back().t_ns;
  std::stable_sort(in.begin(), in.end(), [](const Arrival& a, const Arrival& b) { return a.rt < b.rt; });
  for (size_t i : open_ranges) truth.ranges[i].end = std::max(trace_end, truth.ranges[i].start);
  std::stable_sort(cupti_sent.begin(), cupti_sent.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [when, m] : cupti_sent) truth.cupti.push_back(m);  // in arrival order

  ActivityStream st(0);
  std::vector<ActivityStream::QueryId> qid(query_t.size());
  for (const Arrival& a : in) {
    switch (a.kind) {
      case Arrival::kRecord:
        REQUIRE(st.add(record_of(a)));
        break;
      case Arrival::kSample: st.sample(a.t, a.bytes); break;
      case Arrival::kWatch:
        qid[a.query] = (a.query == moving[0] || a.query == moving[1]) ? st.watch_moving(a.t) : st.watch(a.t);
        break;
      case Arrival::kMove: st.move(qid[a.query], a.t); break;
      case Arrival::kIntercepted: st.intercepted(a.alloc); break;
    }
  }
  st.finish(trace_end);

  CHECK(st.kernel_count() == truth.kernels.size());
  CHECK(st.range_count() == truth.ranges.size());
  REQUIRE(query_t.size() >= 10);
  for (size_t q = 0; q < query_t.size(); ++q) {
    INFO("query " << q << " at " << query_t[q] - T0);
    ActivityAnswer a = st.answer(qid[q]);
    CHECK(names_of(st, a.running) == truth.running_at(query_t[q]));
    CHECK(names_of(st, a.last_before) == truth.last_before(query_t[q], 5));
    std::vector<uint64_t> starts, want;
    for (const KernelActivity& k : a.running) starts.push_back(k.start_ns);
    for (const Truth::Kernel& k : truth.kernels)
      if (k.start <= query_t[q] && query_t[q] < k.end) want.push_back(k.start);
    CHECK(starts == want);
    CHECK(a.nvtx == truth.nvtx_at(query_t[q]));
  }
  std::vector<PhaseSummary> want = truth.phases();
  REQUIRE(want.size() >= 3);  // forward, backward and optimizer (and "inner" past the end of an unended one)
  std::vector<PhaseSummary> got = st.phases();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(want[i].name);
    CHECK(got[i].name == want[i].name);
    CHECK(got[i].count == want[i].count);
    CHECK(got[i].max_peak_bytes == want[i].max_peak_bytes);
    CHECK(got[i].max_growth_bytes == want[i].max_growth_bytes);
  }
  CoverageResult cw = truth.coverage(CoverageOptions{}.max_skew_ns);

  const CoverageResult& cg = st.coverage();
  CHECK(cg.cupti_allocations == cw.cupti_allocations);
  CHECK(cg.matched == cw.matched);
  CHECK(cg.size_mismatches == cw.size_mismatches);
  CHECK(cg.fraction == cw.fraction);
  REQUIRE(cw.missed.size() >= 1);
  REQUIRE(cg.missed.size() == std::min<size_t>(20, cw.missed.size()));
  for (size_t i = 0; i < cg.missed.size(); ++i) CHECK(cg.missed[i].t_ns == cw.missed[i].t_ns);
}

// Two million kernels (about an hour of a small model at 500 kernels/s, or 20 s of PyTorch):
// what the stream holds stays within a window, and the answers are still exact.
TEST_CASE("two million kernels go through in bounded memory, answers intact") {
  constexpr uint64_t kN = 2'000'000, kStep = 10'000;  // an NVTX "step" every 10k kernels
  constexpr uint64_t T0 = 1'000'000'000'000ull, kEvery = 10'000, kDur = 8'000, kLate = 50 * kMs;
  ActivityStream st(0);
  uint64_t rt = 0;
  Encode enc([&](uint8_t tag, const uint8_t* p, size_t n) {
    Record r;
    r.tag = tag;
    r.t_ns = rt;
    r.payload = p;
    r.payload_len = n;
    st.add(r);
  });
  auto k_start = [&](uint64_t i) { return T0 + i * kEvery; };
  // Memory side, in time order: a sample every ms (1 GiB plus a saw tooth of 0..99 MiB; 5 GiB once),
  // an OOM inside kernel 1,000,000, and a peak that moves every 100k kernels.
  const uint64_t t_oom = k_start(1'000'000) + 3'000;
  struct Ev {
    uint64_t t;
    int kind;  // 0 sample, 1 oom, 2 peak, 3 marker start, 4 marker end
    uint64_t v;
  };
  std::vector<Ev> evs;
  for (uint64_t ms = 0; ms < kN * kEvery / kMs; ++ms)
    evs.push_back({T0 + ms * kMs, 0, ms == 12'345 ? 5ull << 30 : (1ull << 30) + (ms % 100) * (1ull << 20)});
  evs.push_back({t_oom, 1, 0});
  for (uint64_t i = 100'000; i <= 1'900'000; i += 100'000) evs.push_back({k_start(i) + 5'000, 2, 0});
  for (uint64_t s = 0; s < kN / kStep; ++s) {  // markers arrive late, like kernels
    evs.push_back({k_start(s * kStep) + kLate, 3, s});
    evs.push_back({k_start((s + 1) * kStep) - 1 + kLate, 4, s});
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  ActivityStream::QueryId oom = ActivityStream::kNoQuery, peak = ActivityStream::kNoQuery;
  size_t next = 0;
  ActivityStream::Retained most;
  auto feed_until = [&](uint64_t until) {
    for (; next < evs.size() && evs[next].t <= until; ++next) {
      const Ev& e = evs[next];
      switch (e.kind) {
        case 0: st.sample(e.t, e.v); break;
        case 1: oom = st.watch(e.t); break;
        case 2: peak == ActivityStream::kNoQuery ? void(peak = st.watch_moving(e.t)) : st.move(peak, e.t); break;
        default:
          rt = e.t;
          enc.marker(e.kind == 3 ? kStart : kEnd, uint32_t(e.v + 1),
                     e.kind == 3 ? k_start(e.v * kStep) : k_start((e.v + 1) * kStep) - 1, 5, e.kind == 3 ? "step" : nullptr);
      }
    }
  };
  static const char* const kNames[] = {"_Z1av", "_Z1bv", "_Z1cv"};
  for (uint64_t i = 0; i < kN; ++i) {
    rt = k_start(i) + kDur + kLate;  // written 50 ms after it ended
    feed_until(rt);
    enc.kernel(kNames[i % 3], k_start(i), k_start(i) + kDur, uint32_t(1 + i % 4), uint32_t(i));
    if (i % 1000 == 0) {
      ActivityStream::Retained r = st.retained();
      most.kernels = std::max(most.kernels, r.kernels);
      most.markers = std::max(most.markers, r.markers);
      most.samples = std::max(most.samples, r.samples);
      most.open_ranges = std::max(most.open_ranges, r.open_ranges);
    }
  }
  feed_until(~0ull);
  st.finish(evs.back().t);

  CHECK(st.kernel_count() == kN);
  CHECK(most.kernels <= ActivityStream::kLastBefore + 2);
  CHECK(most.open_ranges <= 2);
  CHECK(most.markers <= 2 * (kActivityLagNs / (kStep * kEvery)) + 8);  // a lag's worth
  CHECK(most.samples <= kActivityLagNs / kMs + 8);
  INFO("kernels " << most.kernels << " markers " << most.markers << " samples " << most.samples);

  ActivityAnswer a = st.answer(oom);
  REQUIRE(a.running.size() == 1);
  CHECK(a.running[0].correlation == 1'000'000);
  REQUIRE(a.last_before.size() == 5);
  for (size_t j = 0; j < 5; ++j) CHECK(a.last_before[j].correlation == 1'000'000 - j);
  CHECK(a.nvtx == std::vector<std::string>{"step"});
  ActivityAnswer p = st.answer(peak);
  REQUIRE(p.running.size() == 1);
  CHECK(p.running[0].start_ns == k_start(1'900'000));
  CHECK(st.display_name(p.running[0].name_id) == "b()");  // kNames[1'900'000 % 3]
  CHECK(p.last_before[4].correlation == 1'899'996);
  std::vector<PhaseSummary> ph = st.phases();
  REQUIRE(ph.size() == 1);
  CHECK(ph[0].count == kN / kStep);
  CHECK(ph[0].max_peak_bytes == 5ull << 30);
  CHECK(ph[0].max_growth_bytes == (5ull << 30) - (1ull << 30));
}

// Coverage over a long run: CUPTI's records come a few seconds late, an address is reused
// within the window, one allocation interception never saw; the window stays small.
TEST_CASE("coverage: late CUPTI records match, a missed allocation is named, the window stays small") {
  CoverageStream cov;
  auto cupti = [](uint64_t address, uint64_t bytes, uint64_t t) {
    CuptiAllocation m;
    m.address = address;
    m.bytes = bytes;
    m.t_ns = t;
    return m;
  };
  const uint64_t T0 = 1'000'000'000'000ull, kLate = 3'000 * kMs;  // within kActivityLagNs
  std::deque<std::pair<uint64_t, CuptiAllocation>> late;  // (record time, record)
  size_t most = 0;
  for (uint64_t i = 0; i < 200'000; ++i) {
    uint64_t t = T0 + i * kMs;
    // Reused every 7 ms; the one interception misses gets an address of its own (at a reused one,
    // greedy matching would pass the loss on to the last allocation there, as the definition does).
    uint64_t address = i == 123'456 ? 0x7e0000000000ull : 0x7f0000000000ull + (i % 7) * (1 << 20);
    for (; !late.empty() && late.front().first <= t; late.pop_front()) {
      cov.advance(late.front().first);
      cov.cupti(late.front().second);
    }
    if (i != 123'456) cov.intercepted({address, 1 << 20, t, 0});
    late.push_back({t + kLate, cupti(address, 1 << 20, t + (i % 2 ? 30'000 : 0))});  // CUPTI's stamp a bit off
    if (i == 150'000) late.push_back({t + kLate, cupti(0xdead0000, 4096, t)});
    most = std::max(most, cov.retained_intercepted());
  }
  for (auto& [when, m] : late) {
    cov.advance(when);
    cov.cupti(m);
  }
  cov.finish();
  const CoverageResult& c = cov.result();
  CHECK(c.cupti_allocations == 200'001);
  CHECK(c.matched == 199'999);
  REQUIRE(c.missed.size() == 2);
  CHECK(c.missed[0].t_ns == T0 + 123'456 * kMs);  // in CUPTI time order
  CHECK(c.missed[1].address == 0xdead0000);
  CHECK(c.fraction == Approx(199'999.0 / 200'001.0));
  // The window: lag + skew of allocations at one per ms.
  CHECK(most <= (kActivityLagNs + 2 * CoverageOptions{}.max_skew_ns) / kMs + 2);
  CHECK(cov.pending() == 0);
}
