// See analysis.h.
#include "analysis.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <memory>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "activity.h"
#include "activity_format.h"
#include "activity_stream.h"
#include "op_table.h"
#include "live_state.h"
#include "oom_verdict.h"
#include "regular_file.h"

namespace vt::analyzer {

namespace {

// Max-preserving downsampling of one series into at most ~2x `target` buckets.
class Timeline {
 public:
  explicit Timeline(size_t target) : target_(target) {}
  void add(uint64_t t, uint64_t v) {
    if (points_.empty()) {
      t0_ = t;
    } else if (t < next_edge_) {  // still in the last bucket (times only grow): no division
      if (v > points_.back().second) points_.back() = {t, v};
      return;
    }
    points_.push_back({t, v});
    set_last_bucket((t - t0_) / width_);
    if (points_.size() > 2 * target_) coarsen();
  }
  std::vector<std::pair<uint64_t, uint64_t>> take() { return std::move(points_); }

 private:
  void coarsen() {
    width_ *= 2;
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& p : points_) {
      uint64_t b = (p.first - t0_) / width_;
      if (!merged.empty() && (merged.back().first - t0_) / width_ == b) {
        if (p.second > merged.back().second) merged.back() = p;
      } else {
        merged.push_back(p);
      }
    }
    points_ = std::move(merged);
    set_last_bucket((points_.back().first - t0_) / width_);
  }
  void set_last_bucket(uint64_t b) {
    uint64_t edge = t0_ + (b + 1) * width_;
    next_edge_ = edge > t0_ ? edge : ~0ull;  // saturate where it would wrap
  }
  size_t target_;
  uint64_t t0_ = 0, width_ = 1000000, next_edge_ = 0;  // 1 ms buckets to start
  std::vector<std::pair<uint64_t, uint64_t>> points_;
};

// Per-site device bytes at regular points of the run (every `every` events, coarsened so that
// at most ~128 are kept): the input of growth detection.
struct Checkpoints {
  uint64_t every = 8;  // doubles as the run gets longer
  uint64_t countdown = 8;  // events until the next one (no division per event)
  std::vector<uint64_t> t;
  std::vector<absl::flat_hash_map<SiteKey, uint64_t>> snaps;

  void take(const LiveState& st, uint64_t now) {
    absl::flat_hash_map<SiteKey, uint64_t> snap;
    for (const auto& [k, b] : st.sites())
      if (k.bucket == Bucket::Device && b.bytes) snap.emplace(k, b.bytes);
    t.push_back(now);
    snaps.push_back(std::move(snap));
    if (snaps.size() > 128) {  // keep every other one, sample half as often from now on
      size_t w = 0;
      for (size_t i = 0; i < snaps.size(); i += 2, ++w) {
        snaps[w] = std::move(snaps[i]);
        t[w] = t[i];
      }
      snaps.resize(w);
      t.resize(w);
      every *= 2;
    }
  }
};

// Sites whose live bytes keep rising (docs/metrics.md, "growth").
std::vector<GrowthSite> find_growth(const Checkpoints& cp, const LiveState* now, uint64_t now_t, uint64_t min_bytes) {
  std::vector<uint64_t> times = cp.t;
  std::vector<const absl::flat_hash_map<SiteKey, uint64_t>*> snaps;
  for (const auto& s : cp.snaps) snaps.push_back(&s);
  absl::flat_hash_map<SiteKey, uint64_t> current;
  if (now) {
    for (const auto& [k, b] : now->sites())
      if (k.bucket == Bucket::Device && b.bytes) current.emplace(k, b.bytes);
    snaps.push_back(&current);
    times.push_back(now_t);
  }
  std::vector<GrowthSite> out;
  size_t k = snaps.size();
  if (k < 4) return out;
  absl::flat_hash_map<SiteKey, bool> seen;
  for (const auto* s : snaps)
    for (const auto& [key, b] : *s) seen.emplace(key, true);
  for (const auto& [key, unused] : seen) {
    uint64_t hi = 0, first = 0;
    int highs = 0;
    size_t first_high = 0, last_high = 0;
    for (size_t i = 0; i < k; ++i) {
      auto it = snaps[i]->find(key);
      uint64_t v = it == snaps[i]->end() ? 0 : it->second;
      if (i == 0) first = v;
      if (v > hi) {
        if (i > 0 || v > 0) {
          if (highs == 0) first_high = i;
          last_high = i;
          ++highs;
        }
        hi = v;
      }
    }
    uint64_t growth = hi > first ? hi - first : 0;
    if (highs >= 3 && (last_high - first_high) * 3 >= k - 1 && growth >= min_bytes) {
      GrowthSite g;
      g.site.stack_id = key.stack;
      g.site.device = key.device;
      g.site.kind = bucket_name(key.bucket);
      g.site.bytes = hi;
      g.growth_bytes = growth;
      g.new_highs = highs;
      g.first_t_ns = times[first_high];
      g.last_t_ns = times[last_high];
      out.push_back(g);
    }
  }
  std::sort(out.begin(), out.end(), [](const GrowthSite& a, const GrowthSite& b) { return a.growth_bytes > b.growth_bytes; });
  return out;
}

// A growing site's count: its allocations live now (at the failure, or at the end).
void count_live(const LiveState& st, std::vector<GrowthSite>& sites) {
  for (GrowthSite& g : sites) {
    const SiteBytes* b = st.site(SiteKey{g.site.stack_id, g.site.device, Bucket::Device});
    g.site.count = b ? b->count : 0;
  }
}

std::vector<SiteGroup> groups_of(const std::vector<SiteTable::Row>& sites, int device,
                                 bool device_bucket_only) {
  std::vector<SiteGroup> out;
  uint64_t total = 0;
  for (const auto& [k, b] : sites) {
    if (device_bucket_only && (k.bucket != Bucket::Device || k.device != device)) continue;
    if (!b.bytes && !b.count) continue;
    SiteGroup g;
    g.bytes = b.bytes;
    g.count = b.count;
    g.stack_id = k.stack;
    g.device = k.device;
    g.kind = bucket_name(k.bucket);
    total += b.bytes;
    out.push_back(g);
  }
  for (SiteGroup& g : out) g.share = total ? double(g.bytes) / double(total) : 0;
  std::sort(out.begin(), out.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  return out;
}

std::map<std::string, uint64_t> kinds_map(const std::array<uint64_t, 16>& kinds) {
  std::map<std::string, uint64_t> out;
  for (int k = 0; k < 16; ++k) {
    MemKind kind = MemKind(k);
    bool device_memory = kind == MemKind::Device || kind == MemKind::Async || kind == MemKind::VmmPhysical || kind == MemKind::Array;
    if (device_memory && kinds[k]) out[kind_name(kind)] = kinds[k];
  }
  return out;
}

std::map<std::string, uint64_t> kinds_of(const LiveState& st, int device) {
  const DeviceTotals* d = st.find_device(device);
  return d ? kinds_map(d->kinds) : std::map<std::string, uint64_t>{};
}

struct PeakTracker {
  struct Dev {
    uint64_t bytes = 0, t = 0;
    bool pending = false;  // a new peak not yet snapshotted
    // The snapshot, raw: a slowly leaking run reaches a new peak every few events, so taking
    // one must not allocate or sort (live_set() does that once, at the end).
    std::vector<SiteTable::Row> rows;
    std::array<uint64_t, 16> kinds{};
    uint64_t vmm_reserved = 0, vmm_mapped = 0;
    ActivityStream::QueryId activity = ActivityStream::kNoQuery;  // what ran at the peak
  };
  std::map<int, Dev> devs;
  LiveState* st = nullptr;
  // Asked at every new peak, not when it is snapshotted: the kernels of the instant are answered
  // as their records arrive, and nothing is kept to answer later.
  ActivityStream* acts = nullptr;

  void snapshot(int device) {
    Dev& d = devs[device];
    d.rows.clear();
    for (const SiteTable::Row& row : st->sites())
      if (row.key.bucket == Bucket::Device && row.key.device == device && (row.b.bytes || row.b.count))
        d.rows.push_back(row);
    const DeviceTotals* totals = st->find_device(device);
    d.kinds = totals ? totals->kinds : std::array<uint64_t, 16>{};
    d.vmm_reserved = st->reserved_va();
    d.vmm_mapped = st->mapped_va();
    d.pending = false;
  }
  static void before_drop(void* self, int device) {
    auto* p = static_cast<PeakTracker*>(self);
    if (p->dev(device).pending) p->snapshot(device);
  }
  // The last device looked up: events come in long runs on one device.
  int cached_device = -1000;
  Dev* cached = nullptr;
  Dev& dev(int device) {
    if (device != cached_device) {
      cached = &devs[device];  // std::map: the pointer stays valid
      cached_device = device;
    }
    return *cached;
  }
  void watch_activity(Dev& d, uint64_t t) {
    if (d.activity == ActivityStream::kNoQuery)
      d.activity = acts->watch_moving(t);
    else
      acts->move(d.activity, t);  // the superseded peak's question is dropped
  }
  void after(uint64_t t) {
    for (int device : st->changed()) {
      uint64_t v = st->bytes(device, Bucket::Device);
      Dev& d = dev(device);
      if (v > d.bytes) {
        d.bytes = v;
        d.t = t;
        d.pending = true;
        watch_activity(d, t);
      }
    }
  }
};

// NVML's process list, written right after a failed allocation: it belongs to the latest OOM on
// that device that has none yet.
void attach_gpu_processes(const Record& r, uint64_t own_pid, std::vector<OomReport>& ooms) {
  const uint8_t* p = r.payload;
  const uint8_t* end = p + r.payload_len;
  uint64_t device = 0, count = 0;
  if (!(p = format::get_varint(p, end, &device)) || !(p = format::get_varint(p, end, &count))) return;
  std::vector<GpuProcess> procs;
  for (uint64_t i = 0; i < count && i < 1024; ++i) {
    GpuProcess g;
    uint64_t len = 0;
    if (!(p = format::get_varint(p, end, &g.pid)) || !(p = format::get_varint(p, end, &g.bytes)) ||
        !(p = format::get_varint(p, end, &len)) || len > uint64_t(end - p))
      return;
    g.name.assign(reinterpret_cast<const char*>(p), len);
    p += len;
    if (g.pid != own_pid) procs.push_back(std::move(g));
  }
  for (auto it = ooms.rbegin(); it != ooms.rend(); ++it)
    if (it->device == int(device) && !it->nvml) {
      it->nvml = true;
      it->other_processes = std::move(procs);
      return;
    }
}

KernelRef kernel_ref(const ActivityStream& acts, const KernelActivity& k) {
  return {acts.display_name(k.name_id), k.device, k.stream, k.start_ns, k.end_ns};
}

ActivityAt activity_at(const ActivityStream& acts, ActivityStream::QueryId q) {
  ActivityAt a;
  if (q == ActivityStream::kNoQuery) return a;
  ActivityAnswer ans = acts.answer(q);
  for (const KernelActivity& k : ans.running) a.running.push_back(kernel_ref(acts, k));
  for (const KernelActivity& k : ans.last_before) a.last_before.push_back(kernel_ref(acts, k));
  a.nvtx = std::move(ans.nvtx);
  return a;
}

// `oom_queries[i]` asked what ran at rep->ooms[i]; each device's peak asked in PeakTracker.
void add_activity(const ActivityStream& acts, const PeakTracker& peaks,
                  const std::vector<ActivityStream::QueryId>& oom_queries, TraceReport* rep) {
  const RecorderState& st = acts.recorder();
  KernelRecording& k = rep->kernels;
  k.recorded = st.started;
  k.kernels = acts.kernel_count();
  if (!st.seen)
    k.status = "no kernel activity in this trace";
  else if (st.stepped_aside)
    k.status = "CUPTI recorded until another client took it (" + st.stepped_aside_for + ")";
  else if (st.started)
    k.status = "CUPTI recorded kernels" + (st.library.empty() ? std::string() : " (" + st.library + ")");
  else
    k.status = "kernel activity unavailable" + (st.detail.empty() ? std::string() : ": " + st.detail);
  if (st.started) {
    const CoverageResult& c = acts.coverage();  // missed: the first 20 only
    k.cupti_allocations = c.cupti_allocations;
    k.matched = c.matched;
    k.coverage = c.fraction;
    for (const CuptiAllocation& m : c.missed) {
      if (k.missed.size() >= 20) break;
      char b[64];
      snprintf(b, sizeof b, "0x%llx %llu bytes", static_cast<unsigned long long>(m.address),
               static_cast<unsigned long long>(m.bytes));
      k.missed.push_back(b);
    }
  }
  if (acts.kernel_count() == 0 && acts.range_count() == 0) return;
  for (DevicePeak& p : rep->peaks) p.activity = activity_at(acts, peaks.devs.at(p.device).activity);
  for (size_t i = 0; i < rep->ooms.size() && i < oom_queries.size(); ++i)
    rep->ooms[i].activity = activity_at(acts, oom_queries[i]);
  // Memory by phase: device bytes against the top-level NVTX ranges (activity_stream.h).
  for (const PhaseSummary& ph : acts.phases())
    rep->phases.push_back({ph.name, ph.count, ph.max_peak_bytes, ph.max_growth_bytes});
}

}  // namespace

bool analyze_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out, std::string* error) {
  auto reader = TraceReader::open(path, error);
  if (!reader) return false;
  // Stacks are only symbolized at the end: the stream itself brings every stack record.
  TraceReport& rep = *out;
  rep = TraceReport{};
  rep.path = path;

  LiveState st;
  PeakTracker peaks;
  peaks.st = &st;
  st.on_before_drop(&PeakTracker::before_drop, &peaks);
  std::map<int, std::array<std::unique_ptr<Timeline>, kBuckets>> timelines;  // device -> bucket
  int series_device = -1000;
  std::array<std::unique_ptr<Timeline>, kBuckets>* series_of = nullptr;
  Checkpoints cp;
  uint64_t pinned_peak = 0, managed_peak = 0, vmm_reserved_max = 0, vmm_mapped_max = 0;
  // A failed allocation followed by frees: a caching allocator emptying its cache to retry.
  struct PendingFlush {
    bool active = false;
    CacheFlush f;
    uint8_t op = 0;
  } flush;

  std::vector<size_t> open_regions;  // indices into rep.regions
  auto device_total = [&st] { return st.device_bytes_all(); };
  // Kernel activity in a window (activity_stream.h): queries at each device's new peaks and at
  // each OOM, answered as the (later written) records arrive.
  ActivityStream acts(reader->process().start_monotonic_ns);
  peaks.acts = &acts;
  std::vector<ActivityStream::QueryId> oom_queries;  // one per rep.ooms
  bool cupti_on = false;                    // allocations go to the cross-check only then
  bool tty = opt.progress && isatty(STDERR_FILENO);
  while (const Record* next = reader->next()) {
    const Record& r = *next;
    if (acts.add(r)) {
      if (!cupti_on && r.tag == format::kTagCuptiStatus) cupti_on = acts.recorder().started;
      continue;
    }
    if (cupti_on) {
      InterceptedAllocation a;
      if (intercepted_allocation(r, &a)) acts.intercepted(a);
    }
    if (r.tag == format::kTagGpuProcesses) {
      attach_gpu_processes(r, reader->process().pid, rep.ooms);
      continue;
    }
    if (r.tag == format::kTagRegion) {
      uint64_t kind = 0, len = 0;
      const uint8_t* p = format::get_varint(r.payload, r.payload + r.payload_len, &kind);
      if (p) p = format::get_varint(p, r.payload + r.payload_len, &len);
      if (!p || len > uint64_t(r.payload + r.payload_len - p)) continue;
      std::string name(reinterpret_cast<const char*>(p), len);
      if (kind == format::kRegionBegin) {
        RegionReport g;
        g.name = name;
        g.t_begin = r.t_ns;
        g.start_bytes = g.peak_bytes = device_total();
        open_regions.push_back(rep.regions.size());
        rep.regions.push_back(g);
      } else {
        for (size_t i = open_regions.size(); i-- > 0;)
          if (rep.regions[open_regions[i]].name == name) {
            RegionReport& g = rep.regions[open_regions[i]];
            g.t_end = r.t_ns;
            g.end_bytes = device_total();
            g.closed = true;
            open_regions.erase(open_regions.begin() + long(i));
            break;
          }
      }
      continue;
    }
    if (!r.is_event() || !r.op) continue;
    if (rep.events++ == 0) rep.first_t_ns = r.t_ns;
    rep.last_t_ns = r.t_ns;
    if (tty && (rep.events & ((1u << 22) - 1)) == 0)
      fprintf(stderr, "\rvramtrace: %llu million events...", static_cast<unsigned long long>(rep.events >> 20));

    if (r.result != 0) {
      rep.failed_events++;
      if (r.op->action == Action::Acquire && r.result == 2 /* CUDA_ERROR_OUT_OF_MEMORY */) {
        OomReport o;
        o.t_ns = r.t_ns;
        o.op = r.op->name;
        o.result = r.result;
        o.device = r.device;
        o.requested_bytes = r.size;
        o.device_free_bytes = r.free_bytes;
        o.device_total_bytes = r.total_bytes;
        o.process_device_bytes = st.bytes(r.device, Bucket::Device);
        o.process_by_kind = kinds_of(st, r.device);
        uint64_t used = r.total_bytes > r.free_bytes ? r.total_bytes - r.free_bytes : 0;
        o.not_attributable_bytes = used > o.process_device_bytes ? used - o.process_device_bytes : 0;
        o.pool_cached_bytes = st.pool_cached_bytes(r.device);
        o.vmm_unmapped_bytes = st.handle_bytes_unmapped(r.device);
        o.top_holders = groups_of(st.sites(), r.device, true);
        if (o.top_holders.size() > opt.top) o.top_holders.resize(opt.top);
        uint64_t min_growth = std::max<uint64_t>(1 << 20, r.total_bytes / 1000);
        o.grew_before = find_growth(cp, &st, r.t_ns, min_growth);
        count_live(st, o.grew_before);
        if (o.grew_before.size() > opt.top) o.grew_before.resize(opt.top);
        o.stack_id = r.stack;
        rep.ooms.push_back(std::move(o));
        oom_queries.push_back(acts.watch(r.t_ns));
        flush = {true, CacheFlush{r.t_ns, r.size, 0, 0, false}, r.op->code};
      }
      continue;
    }
    if (flush.active) {
      if (r.op->action == Action::Release && r.op->kind == MemKind::Device) {
        auto it = st.live().find(r.addr);
        if (it != st.live().end()) {
          flush.f.freed_bytes += it->second.size;
          flush.f.freed_count++;
        }
      } else if (r.op->action == Action::Acquire) {
        if (r.op->code == flush.op && r.size == flush.f.requested_bytes && flush.f.freed_count > 0) {
          flush.f.retry_succeeded = true;
          rep.fragmentation.cache_flushes.push_back(flush.f);
        }
        flush.active = false;
      }
    }

    st.apply(r);
    peaks.after(r.t_ns);
    if (!st.changed().empty()) acts.sample(r.t_ns, device_total());  // the phases' timeline
    if (!open_regions.empty()) {
      uint64_t now = device_total();
      for (size_t i : open_regions) rep.regions[i].peak_bytes = std::max(rep.regions[i].peak_bytes, now);
    }
    for (int device : st.changed()) {
      if (device != series_device) {
        series_of = &timelines[device];  // std::map: the pointer stays valid
        series_device = device;
      }
      auto& series = *series_of;
      const std::array<uint64_t, kBuckets>& bytes = st.find_device(device)->bytes;
      for (Bucket bk : {Bucket::Device, Bucket::PinnedHost, Bucket::Managed}) {
        uint64_t v = bytes[int(bk)];
        auto& tl = series[int(bk)];
        if (!tl) {
          if (!v) continue;
          tl = std::make_unique<Timeline>(opt.timeline_points);
        }
        tl->add(r.t_ns, v);
      }
      pinned_peak = std::max(pinned_peak, bytes[int(Bucket::PinnedHost)]);
      managed_peak = std::max(managed_peak, bytes[int(Bucket::Managed)]);
    }
    vmm_reserved_max = std::max(vmm_reserved_max, st.reserved_va());
    vmm_mapped_max = std::max(vmm_mapped_max, st.mapped_va());
    if (--cp.countdown == 0) {
      cp.take(st, r.t_ns);
      cp.countdown = cp.every;
    }
  }
  if (tty) fprintf(stderr, "\r%40s\r", "");
  for (size_t i : open_regions) {  // never ended: the trace stopped inside them
    rep.regions[i].t_end = rep.last_t_ns;
    rep.regions[i].end_bytes = device_total();
  }

  rep.process = reader->process();
  rep.problems = reader->problems();
  rep.damage = reader->damage();
  rep.partial = reader->data_lost();
  rep.unmatched_frees = st.unmatched_frees();
  rep.pinned_host_peak_bytes = pinned_peak;
  rep.managed_peak_bytes = managed_peak;

  for (auto& [device, d] : peaks.devs) {
    if (d.pending) peaks.snapshot(device);
    if (!d.bytes) continue;
    DevicePeak p;
    p.device = device;
    p.bytes = d.bytes;
    p.t_ns = d.t;
    p.by_kind = kinds_map(d.kinds);
    p.live_set = groups_of(d.rows, device, true);
    if (p.live_set.size() > opt.top) p.live_set.resize(opt.top);
    rep.peaks.push_back(std::move(p));
  }
  std::sort(rep.peaks.begin(), rep.peaks.end(), [](const DevicePeak& a, const DevicePeak& b) { return a.bytes > b.bytes; });
  if (!rep.peaks.empty()) {
    const auto& top = peaks.devs[rep.peaks[0].device];
    rep.fragmentation.vmm_reserved_bytes_at_peak = top.vmm_reserved;
    rep.fragmentation.vmm_mapped_bytes_at_peak = top.vmm_mapped;
  }
  rep.fragmentation.vmm_reserved_bytes_max = vmm_reserved_max;
  rep.fragmentation.vmm_mapped_bytes_max = vmm_mapped_max;
  std::vector<std::pair<uint64_t, const PoolState*>> pools;  // by key: a stable report order
  for (const auto& [key, p] : st.pools()) pools.push_back({key, &p});
  std::sort(pools.begin(), pools.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, pool] : pools) {
    const PoolState& p = *pool;
    PoolFragmentation pf;
    char name[40];
    if ((key >> 48) == 0xdefa)
      snprintf(name, sizeof name, "default:%d", int(uint32_t(key)));
    else
      snprintf(name, sizeof name, "0x%llx", static_cast<unsigned long long>(key));
    pf.pool = name;
    pf.device = p.device;
    pf.footprint_bytes = p.footprint();
    pf.live_bytes = p.live_bytes;
    pf.largest_free_gap_bytes = p.largest_free_gap(st.live());
    uint64_t free_b = pf.footprint_bytes > pf.live_bytes ? pf.footprint_bytes - pf.live_bytes : 0;
    pf.fragmentation = free_b ? 1.0 - double(pf.largest_free_gap_bytes) / double(free_b) : 0;
    rep.fragmentation.pools.push_back(pf);
  }

  for (auto& [device, series] : timelines)
    for (int b = 0; b < kBuckets; ++b)
      if (series[b]) rep.timeline.push_back({device, bucket_name(Bucket(b)), series[b]->take()});

  // Leaks: everything live at the end, and what only a context teardown released.
  rep.end = rep.process.closed_cleanly ? "clean_exit" : "killed";
  rep.leaks = groups_of(st.sites(), 0, false);
  for (const SiteGroup& g : rep.leaks) {
    rep.leak_bytes += g.bytes;
    rep.leak_count += g.count;
  }
  if (rep.leaks.size() > opt.top) rep.leaks.resize(opt.top);
  rep.teardown = groups_of(st.teardown(), 0, false);
  for (const SiteGroup& g : rep.teardown) {
    rep.teardown_bytes += g.bytes;
    rep.teardown_count += g.count;
  }
  if (rep.teardown.size() > opt.top) rep.teardown.resize(opt.top);
  uint64_t peak_bytes = rep.peaks.empty() ? 0 : rep.peaks[0].bytes;
  rep.growth = find_growth(cp, nullptr, 0, std::max<uint64_t>(1 << 20, peak_bytes / 100));
  count_live(st, rep.growth);
  if (rep.growth.size() > opt.top) rep.growth.resize(opt.top);

  // Kernel activity: what ran at the peaks and failures, memory per NVTX phase, coverage.
  acts.finish(rep.last_t_ns);
  add_activity(acts, peaks, oom_queries, &rep);

  // Symbolize what will be shown, then judge each OOM.
  Symbolizer sym(reader->stacks(), opt.symbols);
  auto fill = [&](std::vector<SiteGroup>& v) {
    for (SiteGroup& g : v) g.stack = sym.stack(g.stack_id);
  };
  for (DevicePeak& p : rep.peaks) fill(p.live_set);
  fill(rep.leaks);
  fill(rep.teardown);
  for (GrowthSite& g : rep.growth) g.site.stack = sym.stack(g.site.stack_id);
  for (OomReport& o : rep.ooms) {
    o.stack = o.stack_id ? sym.stack(o.stack_id) : std::vector<Frame>{};
    fill(o.top_holders);
    for (GrowthSite& g : o.grew_before) g.site.stack = sym.stack(g.site.stack_id);
    judge_oom(o);
  }
  return true;
}

bool trace_file_name(const std::string& name) {
  auto ends_with = [&](const char* suffix) {
    size_t n = strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  if (ends_with(".trace")) return true;
  // The writer's fallbacks when the configured file exists: <path>.<pid> and <path>.<pid>.<n>.
  size_t at = name.rfind(".trace.");
  if (at == std::string::npos || at + 7 == name.size()) return false;
  bool dot = true;  // no empty component
  for (size_t i = at + 7; i < name.size(); ++i) {
    if (name[i] == '.') {
      if (dot) return false;
      dot = true;
    } else if (name[i] >= '0' && name[i] <= '9') {
      dot = false;
    } else {
      return false;
    }
  }
  return !dot;
}

namespace {

// Whether a directory entry is a trace; when named like one but not a regular file, *why says
// what it is instead.
bool trace_entry(const std::string& path, const std::string& name, std::string* why) {
  bool named = trace_file_name(name);
  int fd = open_regular_file(path, why);
  if (fd < 0) return named;  // named like a trace: reported as unreadable; otherwise not ours
  char magic[sizeof format::kFileMagic] = {};
  ssize_t n = pread(fd, magic, sizeof magic, 0);
  close(fd);
  why->clear();
  return named || (n == ssize_t(sizeof magic) && memcmp(magic, format::kFileMagic, sizeof magic) == 0);
}

}  // namespace

bool analyze_job(const std::string& dir, const AnalysisOptions& opt, JobReport* out, std::string* error) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *error = dir + ": cannot open directory: " + strerror(errno);
    return false;
  }
  struct Entry {
    std::string path, why;  // why: set when it cannot even be opened as a regular file
  };
  std::vector<Entry> entries;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    Entry en{dir + (dir.empty() || dir.back() != '/' ? "/" : "") + name, {}};
    if (trace_entry(en.path, name, &en.why)) entries.push_back(std::move(en));
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });
  if (entries.empty()) {
    *error = dir + ": no vramtrace traces in this directory (files named *.trace or starting with the trace magic)";
    return false;
  }
  JobReport& job = *out;
  job = JobReport{};
  for (const Entry& en : entries) {
    TraceReport rep;
    std::string err = en.why.empty() ? std::string() : en.path + ": " + en.why;
    if (!err.empty() || !analyze_trace(en.path, opt, &rep, &err)) {
      rep = TraceReport{};
      rep.path = en.path;
      // The reader's errors start with the path; the job's own lines name it separately.
      if (err.compare(0, en.path.size() + 2, en.path + ": ") == 0) err.erase(0, en.path.size() + 2);
      rep.problems = rep.damage = {err};
      rep.unreadable = rep.partial = true;
      job.unreadable.push_back(std::move(rep));
      continue;
    }
    job.traces.push_back(std::move(rep));
  }
  std::sort(job.traces.begin(), job.traces.end(), [](const TraceReport& a, const TraceReport& b) {
    return a.process.rank != b.process.rank ? a.process.rank < b.process.rank : a.process.pid < b.process.pid;
  });
  uint64_t sum = 0;
  job.min_peak = job.traces.empty() ? 0 : ~0ull;
  for (const TraceReport& t : job.traces) {
    RankRow row;
    row.rank = t.process.rank;
    row.pid = t.process.pid;
    row.host = t.process.hostname;
    row.path = t.path;
    row.peak_bytes = t.peaks.empty() ? 0 : t.peaks[0].bytes;
    row.leak_bytes = t.leak_bytes;
    row.ooms = t.ooms.size();
    if (!t.ooms.empty()) row.verdict = t.ooms[0].verdict;
    row.damaged = t.damaged();
    sum += row.peak_bytes;
    job.max_peak = std::max(job.max_peak, row.peak_bytes);
    job.min_peak = std::min(job.min_peak, row.peak_bytes);
    job.ranks.push_back(row);
  }
  job.mean_peak = job.ranks.empty() ? 0 : sum / job.ranks.size();
  job.imbalance = job.mean_peak ? double(job.max_peak) / double(job.mean_peak) : 0;
  return true;
}

bool analyze_input(const std::string& path, const AnalysisOptions& opt, JobReport* out, bool* is_job, std::string* error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": " + strerror(errno);
    return false;
  }
  *is_job = S_ISDIR(st.st_mode);
  if (*is_job) return analyze_job(path, opt, out, error);
  *out = JobReport{};
  out->traces.resize(1);
  if (!analyze_trace(path, opt, &out->traces[0], error)) return false;
  const TraceReport& t = out->traces[0];
  out->max_peak = out->min_peak = out->mean_peak = t.peaks.empty() ? 0 : t.peaks[0].bytes;
  return true;
}

std::vector<TraceProblem> job_problems(const JobReport& job) {
  std::vector<TraceProblem> out;
  for (const TraceReport& t : job.traces)
    for (const std::string& m : t.damage) out.push_back({t.path, false, m});
  for (const TraceReport& t : job.unreadable)
    for (const std::string& m : t.damage) out.push_back({t.path, true, m});
  return out;
}

std::string problem_line(const TraceProblem& p) {
  return p.path + (p.unreadable ? ": unreadable: " + p.message
                                : ": damaged: " + p.message + " (figures from this trace are lower bounds)");
}

}  // namespace vt::analyzer
