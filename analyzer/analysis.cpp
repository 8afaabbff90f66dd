// See analysis.h; the pass itself is analysis_pass.h.
#include "analysis.h"

#include <unistd.h>

#include <cstdio>

#include "accounting.h"
#include "aggregators/graphs.h"
#include "analysis_pass.h"
#include "live_writer.h"
#include "oom_verdict.h"
#include "remedy_whatif.h"
#include "torch_verdict.h"
#include "user_frames.h"

namespace vt::analyzer {

AnalysisPass::AnalysisPass(const ProcessInfo& process, const AnalysisOptions& opt)
    : opt_(opt),
      pid_(process.pid),
      progress_(opt.progress && isatty(STDERR_FILENO)),
      activity_(process.start_monotonic_ns),
      peaks_(live_, activity_.stream()),
      ooms_(process.pid, opt.top),
      phases_(activity_.stream()),
      timeline_(opt.timeline_points),
      torch_(process.pid, opt.top, opt.timeline_points),
      live_at_(opt.at_ns, opt.at_mark, process.start_monotonic_ns),
      fidelity_(process.pid) {
  for (const DeviceInfo& d : process.devices) live_.set_device_total(d.ordinal, d.total_bytes);
}

// The dispatch, inlined into both loops below (a call per record costs ~7 instructions).
__attribute__((always_inline)) inline void AnalysisPass::dispatch(const Record& r) {
  if (__builtin_expect(r.is_event(), 1)) {  // memory events first: most records are
    activity_.on_event(r);
    if (r.op) event(r);  // (an op newer than this reader: skipped)
    return;
  }
  if (activity_.take(r)) return;  // kernel activity (CUPTI)
  if (r.tag == format::kTagGpuProcesses) {
    GpuProcessList list;
    if (decode_gpu_processes(r, &list)) {
      ooms_.on_gpu_processes(list, r.t_ns);
      torch_.on_gpu_processes(list, r.t_ns);
      const uint64_t after_only = live_.code_after_only_bytes(list.device);
      const uint64_t taken =
          live_.other_processes_listed(list.device, other_processes_bytes(list, pid_), r.t_ns);  // rule 14
      fidelity_.on_gpu_processes(list, r.t_ns, after_only, taken);
    }
    return;
  }
  if (r.tag == format::kTagPoolSync) {  // rule 15: pools give back what they keep above their threshold
    int device;
    if (decode_pool_sync(r, &device)) live_.pools_synchronized(device);
    return;
  }
  if (r.tag == format::kTagPoolUsage) {
    PoolUsageList list;
    if (decode_pool_usage(r, &list)) ooms_.on_pool_usage(list);
    return;
  }
  if (r.tag == format::kTagDevice) {  // (the reader keeps them too; the replay needs each total)
    DeviceInfo d;
    if (decode_device_payload(r.payload, r.payload_len, &d)) live_.set_device_total(d.ordinal, d.total_bytes);
    return;
  }
  if (r.tag == format::kTagRegion) {
    RegionMark mark;
    if (decode_region(r, &mark)) {
      uint64_t tensors = 0;
      regions_.on_mark(r.t_ns, mark, live_.device_bytes_all(), torch_.allocated_now(&tensors) ? &tensors : nullptr);
      torch_.on_mark(r.t_ns, mark);
      if (__builtin_expect(live_at_.on_mark(r.t_ns, mark, live_), 0)) torch_.take_live_at();
    }
    return;
  }
  if (r.tag == format::kTagNote) {  // the recorder's own notes (its Python status is said elsewhere)
    std::string text;
    if (decode_note(r, &text) && text.rfind("Python frames", 0) != 0 && notes_.size() < 8 &&
        std::find(notes_.begin(), notes_.end(), text) == notes_.end())
      notes_.push_back(std::move(text));
    return;
  }
  if (r.tag == format::kTagLookup) {  // the recorder's lookup safety net
    lookups_.on_record(r);
    return;
  }
  if (is_torch_record(r.tag)) {  // PyTorch's block layer
    if (__builtin_expect(live_at_.before(r.t_ns, live_), 0)) torch_.take_live_at();
    torch_.on_record(r, live_);
    uint64_t tensors = 0;
    if (torch_.allocated_now(&tensors)) regions_.after_tensors(r.t_ns, tensors);
    return;
  }
}

__attribute__((always_inline)) inline void AnalysisPass::event(const Record& r) {
  count(r);
  if (!changes_memory(r.result)) {  // rule 1: a failed call changes nothing; an OOM is what the report explains
    failed_++;
    const bool oom = is_out_of_memory(*r.op, r.result);
    if (r.op->action == Action::Acquire) fidelity_.on_failed(r, live_, oom);
    if (oom) {
      ooms_.on_oom(r, live_, leaks_, activity_.stream());
      cache_flushes_.on_oom(r);
      fragmentation_.on_oom(r.t_ns, live_);
      torch_.on_failed(r);
    }
    return;
  }
  const Effect fx = effect_of(*r.op, r);
  cache_flushes_.before(r, live_);
  if (__builtin_expect(live_at_.before(r.t_ns, live_), 0)) torch_.take_live_at();
  snapshots_.before(r.t_ns, live_);
  allocations_.before(r, fx, live_);
  if (SharingAggregator::wants(*r.op)) sharing_.before(r, live_);
  live_.apply(r, fx);  // snapshots a pending peak before a device's bytes go down
  allocations_.after(r, live_);
  torch_.after(r);
  for (int device : live_.changed()) {  // (one loop for the two aggregators that follow each device)
    const DeviceTotals& totals = *live_.find_device(device);
    peaks_.after_device(r.t_ns, device, totals,
                        [this, &r](int dev, const DeviceTotals& t) { fidelity_.on_peak(dev, r.t_ns, t); });
    timeline_.after_device(r.t_ns, device, totals);
  }
  phases_.after(r.t_ns, live_);
  regions_.after(r.t_ns, live_.device_bytes_all());
  fragmentation_.after(r.t_ns, live_);
  leaks_.after(r.t_ns, live_);
  fidelity_.after(r, live_);
}

// Record by record while the live map fits the caches (the map never shrinks: once beyond, the
// rest goes to feed_ahead). The test per record is one compare; the queue's bookkeeping was ~15
// instructions per event of churn (issue 43).
void AnalysisPass::feed_all(TraceReader& reader) {
  while (const Record* r = reader.next()) {
    dispatch(*r);
    if (__builtin_expect(live_.lookups_miss(), 0)) {
      feed_ahead(reader);
      return;
    }
  }
}

// Once the live map outgrows the caches, events wait in a short queue while the map's slot of each
// is prefetched: the replay of a trace with a million live allocations was bound by one cache miss
// per event (a free's lookup, an allocation's insert at a random slot), and kAhead records later
// the slot is in cache (2x faster). Below that the queue's copy would only cost (+78 instructions
// per event of churn). Metadata is dispatched after the queue and before the next read: its
// payload lives only until the reader's next call. The order of records is kept.
void AnalysisPass::feed_ahead(TraceReader& reader) {
  constexpr unsigned kAhead = 8, kMask = kAhead - 1;
  Record queue[kAhead];
  unsigned head = 0, queued = 0;
  const Record* r = reader.next();
  for (;;) {  // dispatch inlined here too: this loop is the hot one of a trace with millions live
    if (r && r->is_event() && queued < kAhead) {
      live_.prefetch(*r);
      queue[(head + queued++) & kMask] = *r;
      r = reader.next();
      continue;
    }
    const Record* now;  // the oldest queued event first; then a metadata record; at the end, nothing
    if (queued) {
      now = &queue[head];
      head = (head + 1) & kMask;
      --queued;
    } else if (r) {
      now = r;
    } else {
      break;
    }
    dispatch(*now);
    if (now == r) r = reader.next();
  }
}

void AnalysisPass::feed(const Record& r) { dispatch(r); }

__attribute__((always_inline)) inline void AnalysisPass::count(const Record& r) {
  if (events_++ == 0) first_t_ = r.t_ns;
  last_t_ = r.t_ns;
  if (progress_ && (events_ & ((1u << 22) - 1)) == 0)
    fprintf(stderr, "\rvramtrace: %llu million events...", static_cast<unsigned long long>(events_ >> 20));
}

void AnalysisPass::finish(TraceReport* rep) {
  if (progress_) fprintf(stderr, "\r%40s\r", "");
  rep->events = events_;
  rep->failed_events = failed_;
  rep->first_t_ns = first_t_;
  rep->last_t_ns = last_t_;
  rep->unmatched_frees = live_.unmatched_frees();
  for (const std::string& n : notes_) rep->problems.push_back("the recorder: " + n);
  regions_.finish(last_t_, live_.device_bytes_all(), rep);
  peaks_.finish(opt_.top, rep);
  graphs_finish(live_, rep);
  fragmentation_.finish(live_, rep);
  cache_flushes_.finish(rep);
  timeline_.finish(rep);
  // PyTorch's segments are its cache, not leaks: the leaks count its tensors instead.
  leaks_.finish(live_, torch_.at_exit(live_), opt_.top, rep);  // growth is measured against the highest peak; the imported part of rep->sharing
  sharing_.finish(live_, rep);
  ooms_.finish(rep);
  activity_.finish(rep->last_t_ns, [this](int device) { return peaks_.activity_query(device); },
                   ooms_.activity_queries(), rep);
  phases_.finish(rep);  // after the activity stream's finish
  torch_.finish(rep);   // after the OOMs and their activity: it adds to them
  fidelity_.finish(rep);  // after the peaks, the OOMs (their NVML lists, pool figures) and the kernel recording
  allocations_.finish(rep);
  live_at_.finish(live_, rep);
  snapshots_.finish(rep);
}

namespace {

// Stacks are symbolized once, for what the report shows; then every OOM is judged.
void symbolize_and_judge(const StackStore& stacks, const SymbolizerOptions& opt, size_t top, TraceReport* rep) {
  Symbolizer sym(stacks, opt);
  // Threads by name; the main thread as "main"; a name a thread only inherited from the main one
  // (the executable's, at most 15 characters: Python's threads, most threads of C programs) says
  // nothing and is left out.
  const uint32_t main_tid = uint32_t(rep->process.pid);
  const std::string& exe = rep->process.exe;
  const std::string inherited = exe.substr(exe.rfind('/') + 1).substr(0, 15);
  auto main_it = stacks.threads.find(main_tid);
  const std::string main_name = main_it == stacks.threads.end() ? inherited : main_it->second.name;
  auto name = [&](std::vector<ThreadShare>& threads) {
    for (ThreadShare& t : threads) {
      if (t.tid == main_tid) t.name = "main";
      else if (auto it = stacks.threads.find(t.tid);
               it != stacks.threads.end() && it->second.name != main_name && it->second.name != inherited)
        t.name = it->second.name;
    }
  };
  auto fill = [&](std::vector<SiteGroup>& v) {
    for (SiteGroup& g : v) {
      g.stack = sym.stack(g.stack_id);
      name(g.threads);
    }
  };
  for (DevicePeak& p : rep->peaks) fill(p.live_set);
  fill(rep->leaks);
  fill(rep->teardown);
  fill(rep->sharing.imported);
  fill(rep->sharing.shared);
  fill(rep->sharing.multicast);
  for (GrowthSite& g : rep->growth) {
    g.site.stack = sym.stack(g.site.stack_id);
    name(g.site.threads);
  }
  for (TorchGrowth& g : rep->torch.growth) name(g.threads);
  for (LargeAllocation& a : rep->allocations.largest) a.stack = a.stack_id ? sym.stack(a.stack_id) : std::vector<Frame>{};
  fill(rep->live_at.live_set);
  for (const Snapshot& s : rep->snapshots.at)
    for (const Snapshot::Site& site : s.sites)
      if (!rep->snapshots.stacks.count(site.stack_id)) rep->snapshots.stacks[site.stack_id] = sym.stack(site.stack_id);
  for (OomReport& o : rep->ooms) {
    o.stack = o.stack_id ? sym.stack(o.stack_id) : std::vector<Frame>{};
    if (auto t = stacks.threads.find(o.tid); t != stacks.threads.end() && is_autograd_thread(t->second.name))
      o.autograd_thread = t->second.name;
    fill(o.top_holders);
    for (GrowthSite& g : o.grew_before) {
      g.site.stack = sym.stack(g.site.stack_id);
      name(g.site.threads);
    }
    for (TorchGrowth& g : o.torch_info.grew_before) name(g.threads);
    judge_oom(o);
  }
  finish_torch(stacks, sym, top, rep);  // PyTorch's terms, where PyTorch was seen
  torch_host_cache_out_of_leaks(rep);   // after finish_torch: it needs to know PyTorch was seen
}

}  // namespace

bool replay_trace(const std::string& path, const AnalysisOptions& opt, ReplayedTrace* replayed, TraceReport* out,
                  std::string* error) {
  auto reader = TraceReader::open(path, error);
  if (!reader) return false;
  *out = TraceReport{};
  out->path = path;
  // Stacks need no pre-pass: the stream brings every stack record, and symbolizing waits for the end.
  AnalysisPass pass(reader->process(), opt);
  pass.feed_all(*reader);
  out->process = reader->process();  // final once the stream has ended
  out->problems = reader->problems();
  out->damage = reader->damage();
  out->partial = reader->data_lost();
  pass.finish(out);
  // No clean close: killed, or still running (a report of a run in progress).
  if (out->end == "killed" && !out->partial && trace_still_written(path)) out->end = "running";
  pass.finish_interception(reader->stacks(), out);
  replayed->stacks = reader->take_stacks();
  return true;
}

void symbolize_trace(const ReplayedTrace& replayed, const AnalysisOptions& opt, TraceReport* out) {
  symbolize_and_judge(replayed.stacks, opt.symbols, opt.top, out);
}

void whatif_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out) {
  cite_whatif_in_remedies(path, opt.symbols, out);  // the settings the remedies name, tried on this run
}

bool analyze_trace(const std::string& path, const AnalysisOptions& opt, TraceReport* out, std::string* error) {
  ReplayedTrace replayed;
  if (!replay_trace(path, opt, &replayed, out, error)) return false;
  symbolize_trace(replayed, opt, out);
  whatif_trace(path, opt, out);
  return true;
}

}  // namespace vt::analyzer
