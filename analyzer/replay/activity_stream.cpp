// See activity_stream.h (the definitions its answers follow, and where they deliberately differ).
#include "activity_stream.h"

#include <absl/container/flat_hash_set.h>

#include <algorithm>

namespace vt::analyzer {

namespace fmt = vt::format;

// ---- CoverageStream ----

CoverageStream::CoverageStream(uint64_t lag_ns, const CoverageOptions& opt, size_t keep_missed)
    : skew_(opt.max_skew_ns), settle_(std::max(lag_ns, opt.max_skew_ns)), keep_missed_(keep_missed) {}

void CoverageStream::intercepted(const InterceptedAllocation& a) {
  advance(a.t_ns);
  Seen s;
  s.address = a.address;
  s.size = a.size;
  s.t = a.t_ns;
  auto [it, fresh] = latest_at_.try_emplace(a.address, 0);
  if (!fresh) s.prev = it->second;
  it->second = seen_.push(s);
}

void CoverageStream::cupti(const CuptiAllocation& m) {
  if (m.release()) return;
  res_.cupti_allocations++;
  pending_.push_back({m.t_ns, seq_++, m});
  std::push_heap(pending_.begin(), pending_.end(), later);
}

void CoverageStream::advance(uint64_t now) {
  if (now <= now_) return;
  now_ = now;
  // Settled: every intercepted allocation within skew of it is in, and so is every CUPTI record
  // before it (they are matched in CUPTI time order).
  while (!pending_.empty() && pending_.front().t + settle_ < now_) {
    std::pop_heap(pending_.begin(), pending_.end(), later);
    match(pending_.back().m);
    pending_.pop_back();
  }
  // Every CUPTI record still to come or pending is at or after now - settle: beyond skew of these.
  while (!seen_.empty() && seen_.front().t + settle_ + skew_ < now_) forget_front();
}

void CoverageStream::finish() {
  while (!pending_.empty()) {
    std::pop_heap(pending_.begin(), pending_.end(), later);
    match(pending_.back().m);
    pending_.pop_back();
  }
  res_.fraction = res_.cupti_allocations ? double(res_.matched) / double(res_.cupti_allocations) : 1.0;
}

// The unmatched intercepted allocation at m's address closest in time (the earliest of equals,
// the definition's choice). The chain runs newest to oldest.
void CoverageStream::match(const CuptiAllocation& m) {
  Seen* best = nullptr;
  uint64_t best_skew = 0;
  auto it = latest_at_.find(m.address);
  for (uint64_t s = it == latest_at_.end() ? ~0ull : it->second; s != ~0ull && s >= seen_.head();) {
    Seen& c = seen_.at(s);
    if (c.t + skew_ < m.t_ns) break;  // older ones are further away
    uint64_t skew = c.t > m.t_ns ? c.t - m.t_ns : m.t_ns - c.t;
    if (!c.matched && skew <= skew_ && (!best || skew <= best_skew)) {
      best = &c;
      best_skew = skew;
    }
    s = c.prev;
  }
  if (!best) {
    if (res_.missed.size() < keep_missed_) res_.missed.push_back(m);
    return;
  }
  best->matched = true;
  res_.matched++;
  if (best->size != m.bytes) res_.size_mismatches++;
}

void CoverageStream::forget_front() {
  auto it = latest_at_.find(seen_.front().address);
  if (it != latest_at_.end() && it->second == seen_.head()) latest_at_.erase(it);
  seen_.pop();
}

// ---- ActivityStream: records and time ----

ActivityStream::ActivityStream(uint64_t base_ns, uint64_t lag_ns, const CoverageOptions& cov)
    : base_(base_ns), lag_(lag_ns), coverage_(lag_ns, cov) {}

bool ActivityStream::add_activity(const Record& r) {
  advance(r.t_ns);
  switch (r.tag) {
    case fmt::kTagKernel: {
      KernelActivity k;
      if (decode_kernel(r, base_, &k)) on_kernel(k);
      break;
    }
    case fmt::kTagCuptiMemory: {
      CuptiAllocation m;
      if (decode_cupti_memory(r, base_, &m)) coverage_.cupti(m);
      break;
    }
    case fmt::kTagNvtx: {
      NvtxMarker m;
      if (decode_nvtx(r, base_, &m)) on_marker(m);
      break;
    }
    case fmt::kTagCuptiStatus: {
      CuptiStatus s;
      if (decode_status(r, &s)) apply_status(s, &recorder_);
      break;
    }
    case fmt::kTagKernelName: {
      uint32_t id = 0;
      std::string name;
      if (decode_kernel_name(r, &id, &name)) kernel_names_[id] = std::move(name);
      break;
    }
    default:  // copies, memsets, pools: not in the report
      break;
  }
  return true;
}

// Everything that waits on the stream's time: the open memory bucket, kernels ahead of it,
// markers and samples a lag behind it, coverage.
void ActivityStream::advance(uint64_t now) {
  if (now <= now_) return;
  now_ = now;
  if (edge_ && now_ >= edge_) close_bucket();  // no sample before its edge can come any more
  if (now_ >= ahead_next_) settle_ahead();
  if (now_ > lag_) settle(now_ - lag_);
  coverage_.advance(now_);
}

void ActivityStream::new_bucket(uint64_t t, uint64_t bytes) {
  constexpr uint64_t kWidth = 1'000'000;  // the report timeline's first bucket width
  if (!sampling_) {
    if (!bytes) return;  // like the timeline: it starts at the first live byte
    sampling_ = true;
    t0_ = t;
  }
  advance(t);
  if (edge_) close_bucket();
  uint64_t edge = t0_ + ((t >= t0_ ? t - t0_ : 0) / kWidth + 1) * kWidth;
  edge_ = edge > t0_ ? edge : ~0ull;
  cur_ = {t, bytes};
}

void ActivityStream::close_bucket() {
  samples_.push(cur_);
  edge_ = 0;
}

// ---- kernels ----

void ActivityStream::Latest::offer(const Kept& e) {
  auto later = [](const Kept& a, const Kept& b) {
    return a.k.start_ns != b.k.start_ns ? a.k.start_ns > b.k.start_ns : a.seq > b.seq;
  };
  if (n == kLastBefore && !later(e, k[n - 1])) return;
  size_t i = n < kLastBefore ? n++ : n - 1;
  for (; i > 0 && later(e, k[i - 1]); --i) k[i] = k[i - 1];
  k[i] = e;
}

void ActivityStream::on_kernel(const KernelActivity& k) {
  ++kernels_;
  Kept e{k, ++seq_};
  bool behind = k.start_ns < now_;
  if (behind) latest_.offer(e);
  if (!behind || k.end_ns > now_) {  // a query at the stream's time could still count it as running
    ahead_.push_back({e, behind});
    ahead_next_ = std::min(ahead_next_, behind ? k.end_ns : k.start_ns + 1);
  }
  for (QueryId id : moving_) update(queries_[id], e);
  update_fixed(e);
}

void ActivityStream::update(Query& q, const Kept& e) {
  const KernelActivity& k = e.k;
  if (k.start_ns <= q.t && q.t < k.end_ns) q.running.push_back(e);
  // A lag past q.t, only kernels still running at it can come (a record follows its kernel's
  // end): one that ended before q.t and is written later than that is not counted.
  if (k.start_ns < q.t && (q.t < k.end_ns || q.t + lag_ >= now_)) q.last.offer(e);
}

size_t ActivityStream::first_fixed_at(uint64_t t) const {
  return size_t(std::lower_bound(fixed_.begin(), fixed_.end(), t,
                                 [this](QueryId id, uint64_t v) { return queries_[id].t < v; }) -
                fixed_.begin());
}

// Fixed queries are by time: only those inside the kernel, and those after it still within the
// lag, are looked at (an OOM storm must not make every kernel visit every OOM).
void ActivityStream::update_fixed(const Kept& e) {
  const KernelActivity& k = e.k;
  size_t n = fixed_.size();
  for (size_t i = first_fixed_at(k.start_ns); i < n && queries_[fixed_[i]].t < k.end_ns; ++i) update(queries_[fixed_[i]], e);
  uint64_t lo = std::max({k.end_ns, k.start_ns + 1, now_ > lag_ ? now_ - lag_ : 0});
  for (size_t i = first_fixed_at(lo); i < n; ++i) update(queries_[fixed_[i]], e);
}

// Kernels ahead of the stream's time join latest_ once they start behind it, and are dropped
// once they have also ended behind it.
void ActivityStream::settle_ahead() {
  ahead_next_ = ~0ull;
  size_t w = 0;
  for (Ahead& a : ahead_) {
    const KernelActivity& k = a.e.k;
    if (!a.offered && k.start_ns < now_) {
      latest_.offer(a.e);
      a.offered = true;
    }
    if (a.offered && k.end_ns <= now_) continue;
    ahead_next_ = std::min(ahead_next_, a.offered ? k.end_ns : k.start_ns + 1);
    ahead_[w++] = a;
  }
  ahead_.resize(w);
}

ActivityStream::QueryId ActivityStream::add_query(uint64_t t, bool moving) {
  advance(t);
  QueryId id = QueryId(queries_.size());
  queries_.emplace_back();
  Query& q = queries_.back();
  q.t = t;
  seed(q);
  if (moving) {
    moving_.push_back(id);
    if (t < settled_) resolve(q);
    return id;
  }
  size_t at = size_t(std::upper_bound(fixed_.begin(), fixed_.end(), t,
                                      [this](uint64_t v, QueryId x) { return v < queries_[x].t; }) -
                     fixed_.begin());
  fixed_.insert(fixed_.begin() + long(at), id);
  if (t < settled_) {  // behind the horizon already (the stream went back in time): ranges as they are now
    resolve(q);
    ++fixed_resolved_;  // every query before it is resolved too
  }
  return id;
}

void ActivityStream::move(QueryId id, uint64_t t) {
  advance(t);
  Query& q = queries_[id];
  q.t = t;
  seed(q);
  if (t < settled_) resolve(q);
}

// A query starts from what has arrived: the latest starts behind its time (t is the stream's
// time, so latest_ is exactly the candidates) and the kernels still ahead.
void ActivityStream::seed(Query& q) {
  q.running.clear();
  q.last.n = 0;
  q.nvtx.clear();
  q.resolved = false;
  for (size_t i = 0; i < latest_.n; ++i)
    if (latest_.k[i].k.start_ns < q.t) q.last.offer(latest_.k[i]);
  for (const Ahead& a : ahead_) {
    const KernelActivity& k = a.e.k;
    if (k.start_ns <= q.t && q.t < k.end_ns) q.running.push_back(a.e);
    if (!a.offered && k.start_ns < q.t) q.last.offer(a.e);
  }
}

// ---- NVTX and phases ----

uint32_t ActivityStream::intern(const std::string& name) {
  auto [it, fresh] = name_ids_.try_emplace(name, uint32_t(names_.size()));
  if (fresh) names_.push_back(name);
  return it->second;
}

namespace {
template <typename M>
bool after(const M& a, const M& b) {  // heap order: the earliest (time, kind, arrival) on top
  if (a.t != b.t) return a.t > b.t;
  if (a.kind != b.kind) return a.kind > b.kind;
  return a.seq > b.seq;
}
}  // namespace

void ActivityStream::on_marker(const NvtxMarker& m) {
  uint8_t kind;
  if (m.flags & fmt::kNvtxStart)
    kind = kStart;
  else if (m.flags & fmt::kNvtxEnd)
    kind = kEnd;
  else
    return;  // instants are not in the report
  markers_.push_back({m.t_ns, seq_++, kind, m.id, m.object_b, kind == kStart ? intern(m.name) : 0});
  std::push_heap(markers_.begin(), markers_.end(), after<Marker>);
}

// Applies markers and samples before `horizon` in time order (at one instant: ends, samples,
// starts, as the batch definitions' half-open intervals want), answering the NVTX part of each
// query once everything up to its time is in.
void ActivityStream::settle(uint64_t horizon) {
  if (edge_) horizon = std::min(horizon, cur_.t_ns);  // the open bucket's sample may still change
  if (horizon <= settled_) return;
  for (;;) {
    bool m = !markers_.empty() && markers_.front().t < horizon;
    bool s = !samples_.empty() && samples_.front().t_ns < horizon;
    if (!m && !s) break;
    bool take_sample = s && (!m || samples_.front().t_ns < markers_.front().t ||
                             (samples_.front().t_ns == markers_.front().t && markers_.front().kind > kSample));
    uint64_t t = take_sample ? samples_.front().t_ns : markers_.front().t;
    resolve_before(t);
    orphan_ends_.erase(std::remove_if(orphan_ends_.begin(), orphan_ends_.end(), [t](const auto& o) { return o.second < t; }),
                       orphan_ends_.end());
    if (take_sample) {
      apply_sample(samples_.front());
      samples_.pop();
    } else {
      std::pop_heap(markers_.begin(), markers_.end(), after<Marker>);
      Marker mk = markers_.back();
      markers_.pop_back();
      apply_marker(mk);
    }
  }
  resolve_before(horizon);
  settled_ = horizon;
}

void ActivityStream::resolve_before(uint64_t t) {
  while (fixed_resolved_ < fixed_.size() && queries_[fixed_[fixed_resolved_]].t < t) resolve(queries_[fixed_[fixed_resolved_++]]);
  for (QueryId id : moving_)
    if (!queries_[id].resolved && queries_[id].t < t) resolve(queries_[id]);
}

// Everything up to q.t is applied: the open ranges are those containing it.
void ActivityStream::resolve(Query& q) {
  q.resolved = true;
  q.nvtx.clear();
  if (open_.empty()) return;
  std::vector<const Open*> in;
  for (const auto& [id, o] : open_) in.push_back(&o);
  std::sort(in.begin(), in.end(), [](const Open* a, const Open* b) {
    if (a->thread != b->thread) return a->thread < b->thread;
    return a->start != b->start ? a->start < b->start : a->seq < b->seq;
  });
  for (const Open* o : in) q.nvtx.push_back(o->name);
}

void ActivityStream::apply_sample(const BytesPoint& s) {
  level_ = s.bytes;
  for (uint32_t id : open_top_) {
    Open& o = open_.find(id)->second;
    o.peak = std::max(o.peak, s.bytes);
  }
}

// Depth as ActivityIndex::finish computes it for the export: a range is top level when no range
// is open on its thread as it starts. (Two starts at one instant on one thread nest in arrival
// order, where the index puts the longer outside: NVTX pushes on one thread cannot share a
// timestamp.)
void ActivityStream::apply_marker(const Marker& m) {
  if (m.kind == kEnd) {
    auto it = open_.find(m.id);
    if (it == open_.end()) {  // its start is at this instant, or it never had one
      orphan_ends_.push_back({m.id, m.t});
      return;
    }
    Open o = it->second;
    open_.erase(it);
    close_range(m.id, o);
    return;
  }
  ++ranges_;
  auto th = thread_open_.find(m.thread);
  Open o{m.t, m.seq, m.thread, m.name, th == thread_open_.end(), level_, level_};
  for (auto it = orphan_ends_.begin(); it != orphan_ends_.end(); ++it)
    if (it->first == m.id) {  // zero length: it ended at this instant, before it could hold anything
      orphan_ends_.erase(it);
      if (o.top) add_phase(o);
      return;
    }
  if (!open_.emplace(m.id, o).second) return;  // a repeated id: the first range keeps it
  thread_open_[m.thread]++;
  if (o.top) open_top_.push_back(m.id);
}

void ActivityStream::close_range(uint32_t id, const Open& o) {
  auto th = thread_open_.find(o.thread);
  if (th != thread_open_.end() && --th->second == 0) thread_open_.erase(th);
  if (!o.top) return;
  open_top_.erase(std::find(open_top_.begin(), open_top_.end(), id));
  add_phase(o);
}

void ActivityStream::add_phase(const Open& o) {
  Phase& p = phases_[o.name];
  p.count++;
  p.max_peak = std::max(p.max_peak, o.peak);
  p.max_growth = std::max(p.max_growth, o.peak - o.start_bytes);
}

// Ranges that never end (no end marker anywhere) end at the trace's end, or at their start when
// later: an end marker for each, so that they are applied in order like the others.
void ActivityStream::end_unended(uint64_t trace_end) {
  absl::flat_hash_set<uint32_t> ends;
  for (const Marker& m : markers_)
    if (m.kind == kEnd) ends.insert(m.id);
  std::vector<Marker> add;
  for (const auto& [id, o] : open_)
    if (!ends.contains(id)) add.push_back({std::max(trace_end, o.start), 0, kEnd, id, o.thread, 0});
  for (const Marker& m : markers_)
    if (m.kind == kStart && !ends.contains(m.id)) add.push_back({std::max(trace_end, m.t), 0, kEnd, m.id, m.thread, 0});
  for (Marker& m : add) {
    m.seq = seq_++;
    markers_.push_back(m);
    std::push_heap(markers_.begin(), markers_.end(), after<Marker>);
  }
}

void ActivityStream::finish(uint64_t trace_end_ns) {
  if (edge_) close_bucket();
  end_unended(trace_end_ns);
  settle(~0ull);
  coverage_.finish();
  for (Query& q : queries_)
    std::sort(q.running.begin(), q.running.end(), [](const Kept& a, const Kept& b) {
      return a.k.start_ns != b.k.start_ns ? a.k.start_ns < b.k.start_ns : a.seq < b.seq;
    });
}

// ---- answers ----

ActivityAnswer ActivityStream::answer(QueryId id) const {
  ActivityAnswer a;
  const Query& q = queries_[id];
  for (const Kept& e : q.running) a.running.push_back(e.k);
  for (size_t i = 0; i < q.last.n; ++i) a.last_before.push_back(q.last.k[i].k);
  for (uint32_t n : q.nvtx) a.nvtx.push_back(names_[n]);
  return a;
}

std::vector<PhaseSummary> ActivityStream::phases() const {
  std::vector<PhaseSummary> out;
  for (const auto& [name, p] : phases_) out.push_back({names_[name], p.count, p.max_peak, p.max_growth});
  sort_phases(&out);
  return out;
}

const std::string& ActivityStream::kernel_name(uint32_t id) const { return kernel_name_of(kernel_names_, id); }
std::string ActivityStream::display_name(uint32_t id) const { return kernel_display_name(kernel_names_, id); }

ActivityStream::Retained ActivityStream::retained() const {
  Retained r;
  r.kernels = latest_.n + ahead_.size();
  r.markers = markers_.size();
  r.samples = samples_.size();
  r.open_ranges = open_.size();
  r.intercepted = coverage_.retained_intercepted();
  r.cupti_pending = coverage_.pending();
  return r;
}

}  // namespace vt::analyzer
