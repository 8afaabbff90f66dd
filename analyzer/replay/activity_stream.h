// Kernel activity for the report, in one pass whose memory is bounded by a time window, by the
// distinct names and by the open questions, not by the number of records. (ActivityIndex keeps
// every record: right for an export, tens of GB for an hour of PyTorch at ~100k kernels/s.)
// It owns the answers the report asks of kernel activity:
//   - what ran at an instant (a device's peak, an OOM): a query registered when the memory event
//     is seen and answered as the kernel records arrive (ActivityStream::watch);
//   - the NVTX ranges enclosing those instants, and device memory per top-level NVTX range
//     ("phases"): markers and memory samples applied in time order once the stream is a lag past;
//   - coverage: CUPTI's MEMORY2 allocations matched to intercepted ones in a sliding window
//     (CoverageStream).
// Why a lag: an activity record is written when CUPTI hands its buffer over (the recorder flushes
// every 100 ms), after the memory events of the same instant; the reader merges by record time.
// The definitions (docs/metrics.md, "Regions, phases and kernels"): the kernels running at an
// instant are those whose [start, end) contains it, by start; the last before it are the five that
// started last before it (running or finished), latest first; the enclosing NVTX ranges are those
// whose [start, end) contains it, by thread, outermost first; a phase is a range with no range
// open on its thread as it starts, and its peak the highest device bytes within [start, end),
// counting what was live at its start; coverage matches each CUPTI allocation, in CUPTI time
// order, with the unmatched intercepted one at its address closest in time (the earliest of
// equals) within max_skew_ns. tests/cupti/stream_test.cpp checks the answers against these
// definitions computed directly from what it generated.
// Where the answers can differ from those definitions, deliberately:
//   - a record later than kActivityLagNs behind its GPU time: a kernel that ended before an
//     instant is then not among the last before it (one still running at it always counts, however
//     long it ran), an NVTX marker is applied after instants it should have enclosed, a CUPTI
//     allocation may be counted missed;
//   - phases use the device bytes of all devices in 1 ms buckets (max-preserving: a bucket stands
//     at its highest point's time);
//   - a range that never ends encloses an instant answered before the trace's end even when that
//     instant turns out to be the trace's last (the definition ends it there, exclusive).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "activity.h"
#include "activity_format.h"
#include "trace_reader.h"

namespace vt::analyzer {

// How long after its GPU time an activity record may be written and still count: CUPTI's batching
// plus the 100 ms flush, with room for a slow flush.
constexpr uint64_t kActivityLagNs = 5'000'000'000;

// A FIFO in one power-of-two buffer that only grows: nothing is allocated once it has reached its
// high-water mark (std::deque allocates and frees blocks as it slides). Elements are addressed by
// a sequence number that never repeats, so a stale reference is detectable (seq < head()).
template <typename T>
class SeqRing {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return size_t(tail_ - head_); }
  uint64_t head() const { return head_; }
  T& front() { return buf_[head_ & mask_]; }
  const T& front() const { return buf_[head_ & mask_]; }
  T& at(uint64_t seq) { return buf_[seq & mask_]; }
  uint64_t push(const T& v) {
    if (size() == buf_.size()) grow();
    buf_[tail_ & mask_] = v;
    return tail_++;
  }
  void pop() { ++head_; }

 private:
  void grow() {
    size_t n = buf_.empty() ? 64 : buf_.size() * 2;
    std::vector<T> b(n);
    for (uint64_t s = head_; s < tail_; ++s) b[s & (n - 1)] = buf_[s & mask_];
    buf_.swap(b);
    mask_ = n - 1;
  }
  std::vector<T> buf_;
  uint64_t mask_ = 0, head_ = 0, tail_ = 0;
};

// The coverage cross-check over a stream. Intercepted allocations arrive at their own time;
// CUPTI's arrive up to `lag` later. A CUPTI allocation is matched once nothing that could change
// its match can still come (lag past its time), in CUPTI time order, so the result is what
// matching them all at the end would give; an intercepted one is forgotten once no CUPTI record
// still to come could match it.
class CoverageStream {
 public:
  explicit CoverageStream(uint64_t lag_ns = kActivityLagNs, const CoverageOptions& opt = {}, size_t keep_missed = 20);

  void intercepted(const InterceptedAllocation& a);  // a.t_ns: the stream's time
  void cupti(const CuptiAllocation& m);              // releases are ignored
  void advance(uint64_t now);                        // the stream's time
  void finish();                                     // matches what is still pending

  // After finish(). `missed` holds the first keep_missed, in CUPTI time order.
  const CoverageResult& result() const { return res_; }
  size_t retained_intercepted() const { return seen_.size(); }
  size_t pending() const { return pending_.size(); }

 private:
  struct Seen {
    uint64_t address = 0, size = 0, t = 0;
    uint64_t prev = ~0ull;  // ring seq of the previous allocation at the same address
    bool matched = false;
  };
  struct Pending {
    uint64_t t, seq;
    CuptiAllocation m;
  };
  static bool later(const Pending& a, const Pending& b) { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  void match(const CuptiAllocation& m);
  void forget_front();

  uint64_t skew_, settle_;  // settle: how long after its time a CUPTI allocation is matched
  size_t keep_missed_;
  uint64_t now_ = 0, seq_ = 0;
  SeqRing<Seen> seen_;                                  // in time order
  absl::flat_hash_map<uint64_t, uint64_t> latest_at_;  // address -> seq of its latest in seen_
  std::vector<Pending> pending_;                        // min-heap by (time, arrival)
  CoverageResult res_;
};

// What ran at one instant (the definitions above).
struct ActivityAnswer {
  std::vector<KernelActivity> running;      // by start
  std::vector<KernelActivity> last_before;  // latest start first
  std::vector<std::string> nvtx;            // enclosing ranges by thread, outermost first
};

class ActivityStream {
 public:
  using QueryId = uint32_t;
  static constexpr QueryId kNoQuery = ~0u;
  static constexpr size_t kLastBefore = 5;

  explicit ActivityStream(uint64_t base_ns, uint64_t lag_ns = kActivityLagNs, const CoverageOptions& cov = {});

  // Takes an activity record; returns false (and ignores it) for any other record.
  bool add(const Record& r) { return format::is_activity_tag(r.tag) && add_activity(r); }
  // A successful intercepted allocation (the coverage cross-check's other side).
  void intercepted(const InterceptedAllocation& a) {
    advance(a.t_ns);
    coverage_.intercepted(a);
  }
  // Live device bytes (all devices) after an event that changed a device's totals: the timeline
  // of the phases, max-preserving in 1 ms buckets like the report's timeline before it coarsens
  // (which it must not: a phase lasts milliseconds). Inline: one compare for most events.
  void sample(uint64_t t, uint64_t bytes) {
    if (t < edge_) {
      if (bytes > cur_.bytes) cur_ = {t, bytes};
      return;
    }
    new_bucket(t, bytes);
  }

  // What ran at t: t is the stream's time (the memory event being read). Answers are final after
  // finish(). A moving query follows a device's peak: move() re-aims it at the new peak's time.
  QueryId watch(uint64_t t) { return add_query(t, false); }
  QueryId watch_moving(uint64_t t) { return add_query(t, true); }
  void move(QueryId q, uint64_t t);

  // Ranges still open end at `trace_end_ns` (or at their start when later).
  void finish(uint64_t trace_end_ns);

  const RecorderState& recorder() const { return recorder_; }
  uint64_t kernel_count() const { return kernels_; }
  uint64_t range_count() const { return ranges_; }  // NVTX ranges (start markers applied)
  // After finish():
  ActivityAnswer answer(QueryId q) const;
  std::vector<PhaseSummary> phases() const;  // by max peak, descending (sort_phases)
  const CoverageResult& coverage() const { return coverage_.result(); }
  const std::string& kernel_name(uint32_t id) const;
  std::string display_name(uint32_t id) const;  // demangled; "kernel #N" when unknown

  // What is held right now: memory is bounded by these, whatever the trace's length.
  struct Retained {
    size_t kernels = 0;       // kept to answer future queries (the latest few, and any still ahead)
    size_t markers = 0;       // NVTX markers waiting for the lag to pass
    size_t samples = 0;       // memory samples waiting for the lag to pass
    size_t open_ranges = 0;   // NVTX ranges started and not ended
    size_t intercepted = 0;   // coverage window
    size_t cupti_pending = 0;
  };
  Retained retained() const;

 private:
  struct Kept {  // a kernel and its arrival number (ties at one start: the later arrival is later)
    KernelActivity k;
    uint64_t seq = 0;
  };
  struct Latest {  // the kLastBefore latest starts, latest first
    Kept k[kLastBefore];
    size_t n = 0;
    void offer(const Kept& e);
  };
  struct Ahead {  // a kernel not yet behind the stream's time (starts or ends after it)
    Kept e;
    bool offered = false;  // to latest_ (once its start is behind the stream's time)
  };
  struct Query {
    uint64_t t = 0;
    bool resolved = false;  // its NVTX ranges are known
    std::vector<Kept> running;
    Latest last;
    std::vector<uint32_t> nvtx;  // name ids
  };
  enum : uint8_t { kEnd = 0, kSample = 1, kStart = 2 };  // order of things at one instant
  struct Marker {
    uint64_t t, seq;
    uint8_t kind;
    uint32_t id, thread, name;
  };
  struct Open {  // an NVTX range started and not yet ended
    uint64_t start, seq;
    uint32_t thread, name;
    bool top;                  // depth 0 on its thread: a phase
    uint64_t start_bytes, peak;
  };
  struct Phase {
    size_t count = 0;
    uint64_t max_peak = 0, max_growth = 0;
  };

  bool add_activity(const Record& r);
  void advance(uint64_t now);
  void new_bucket(uint64_t t, uint64_t bytes);
  void close_bucket();
  // Kernels.
  void on_kernel(const KernelActivity& k);
  void update(Query& q, const Kept& e);
  void update_fixed(const Kept& e);
  void settle_ahead();
  QueryId add_query(uint64_t t, bool moving);
  void seed(Query& q);
  size_t first_fixed_at(uint64_t t) const;  // index in fixed_ of the first query with t >= t
  // NVTX and phases, applied in time order up to a horizon.
  void on_marker(const NvtxMarker& m);
  uint32_t intern(const std::string& name);
  void settle(uint64_t horizon);
  void resolve_before(uint64_t t);
  void resolve(Query& q);
  void apply_marker(const Marker& m);
  void apply_sample(const BytesPoint& s);
  void close_range(uint32_t id, const Open& o);
  void add_phase(const Open& o);
  void end_unended(uint64_t trace_end);

  uint64_t base_, lag_;
  uint64_t now_ = 0, seq_ = 0, kernels_ = 0, ranges_ = 0;
  RecorderState recorder_;
  KernelNames kernel_names_;
  // Kernels kept for queries not yet asked: the latest starts behind the stream's time, and
  // whatever is still ahead of it (a record stamped before its kernel ended: clock alignment).
  Latest latest_;
  std::vector<Ahead> ahead_;
  uint64_t ahead_next_ = ~0ull;  // the stream time at which ahead_ next changes
  std::vector<Query> queries_;
  std::vector<QueryId> fixed_;   // fixed queries by time
  std::vector<QueryId> moving_;
  size_t fixed_resolved_ = 0;    // fixed_[0, this) have their NVTX ranges
  uint64_t settled_ = 0;         // markers and samples before this time are applied
  // Memory samples: the current 1 ms bucket, then those waiting for the lag.
  bool sampling_ = false;
  uint64_t t0_ = 0, edge_ = 0;  // edge_ = 0: no open bucket (the next sample starts one)
  BytesPoint cur_;
  SeqRing<BytesPoint> samples_;
  uint64_t level_ = 0;  // live bytes at the settled horizon
  // NVTX: markers by (time, kind, arrival) until settled; ranges open at the horizon.
  std::vector<Marker> markers_;  // min-heap
  absl::flat_hash_map<uint32_t, Open> open_;
  std::vector<uint32_t> open_top_;                      // ids of open phases
  absl::flat_hash_map<uint32_t, uint32_t> thread_open_;  // thread -> ranges open on it
  std::vector<std::pair<uint32_t, uint64_t>> orphan_ends_;  // ends applied before their start (same instant)
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<std::string> names_;
  absl::flat_hash_map<uint32_t, Phase> phases_;  // by name id
  CoverageStream coverage_;
};

}  // namespace vt::analyzer
