// See fidelity.h.
#include "aggregators/fidelity.h"

#include <cstdlib>

#include "aggregators/site_groups.h"
#include "oom_verdict.h"

namespace vt::analyzer {

FidelityAggregator::Reading FidelityAggregator::read(const LiveState& live, int device, uint64_t t, uint64_t free,
                                                     uint64_t total) const {
  Reading x;
  x.valid = true;
  x.t = t;
  x.free = free;
  x.total = total;
  if (const DeviceTotals* d = live.find_device(device)) {
    x.version = d->version;
    x.kinds = d->kinds;
    x.tracked = d->bytes[int(Bucket::Device)];
  }
  x.contexts = live.code_bytes(device, CodeCategory::Context);
  x.modules = live.code_bytes(device, CodeCategory::Module);
  x.pool_cached = live.pool_cached_bytes(device);
  x.after_only = live.code_after_only_bytes(device);
  for (const CodeEntry& c : live.code_costs()) x.context_count += c.device == device && c.category == CodeCategory::Context;
  return x;
}

void FidelityAggregator::reading(int device, const Reading& x) {
  Dev& d = devs_[device];
  if (d.before_is_last) {
    d.before = d.last;
    d.before_is_last = false;
  }
  d.last = x;
  if (d.peak && !d.after.valid) d.after = x;
}

void FidelityAggregator::on_failed(const Record& r, const LiveState& live, bool oom) {
  const bool figures = r.has(format::kEvFailed) && r.total_bytes > 0;
  Reading x = figures ? read(live, r.device, r.t_ns, r.free_bytes, r.total_bytes) : Reading{};
  if (oom) {  // invalid when the driver could not be read
    ooms_.next() = x;
    ooms_.items().back().t = r.t_ns;  // (matched to its OOM report by time)
  }
  if (figures) reading(r.device, x);
}

void FidelityAggregator::after_code(const Record& r, const LiveState& live) {
  uint64_t free = 0;
  const OpInfo& op = *r.op;
  if (!field_value(op, r, Field::FreeAfter, &free)) return;
  const int device = code_device(op, r);
  const uint64_t total = live.device_total(device);
  if (total) reading(device, read(live, device, r.t_ns, free, total));
}

void FidelityAggregator::on_gpu_processes(const GpuProcessList& list, uint64_t t, uint64_t after_only_before,
                                          uint64_t taken) {
  nvml_[list.device].push_back({t, other_processes_bytes(list, own_pid_)});
  if (taken) corrections_[list.device].push_back({t, after_only_before, taken});
}

Fidelity FidelityAggregator::explain(const Reading& x, uint64_t instant, bool at_instant,
                                     const KernelRecording& k) const {
  Fidelity f;
  if (!x.valid) return f;
  f.known = true;
  f.t_ns = x.t;
  f.at_instant = at_instant;
  f.offset_ns = at_instant ? 0 : int64_t(x.t - instant);
  f.total_bytes = x.total;
  f.used_bytes = x.total > x.free ? x.total - x.free : 0;
  f.tracked_by_kind = bytes_by_kind(x.kinds);
  f.tracked_bytes = x.tracked;
  f.contexts_bytes = x.contexts;
  f.modules_bytes = x.modules;
  f.pool_cached_bytes = x.pool_cached;
  f.pool_cached_source = "model";
  // vramtrace's CUPTI recorder did not run: no buffers of its own. When it ran with its cap on
  // CUPTI's device buffers (trace status kind 7: N per context, B bytes each), CUPTI holds at
  // most N x B per context on the device: that bound is the figure (CUPTI allocates them as it
  // needs them, a few up front; the bound overstates by at most (N - 3) x B per context). The
  // contexts are those the trace saw created or retained on the device, at least 1 (CUPTI ran,
  // so a context existed). CUPTI's default (no cap: up to 250 per context) or an unknown size
  // leaves the figure unknown.
  f.cupti_known = !k.recorded;
  if (k.recorded && k.device_buffers && k.device_buffer_bytes) {
    const uint64_t contexts = x.context_count ? x.context_count : 1;
    f.cupti_known = true;
    f.cupti_bytes = k.device_buffers * k.device_buffer_bytes * contexts;
    f.cupti_basis = "at most " + std::to_string(k.device_buffers) + " device buffers of " +
                    std::to_string(k.device_buffer_bytes) + " bytes per context x " + std::to_string(contexts) +
                    (contexts == 1 ? " context" : " contexts");
  }
  return f;
}

const FidelityAggregator::Correction* FidelityAggregator::correction_after(int device, uint64_t t,
                                                                         uint64_t after_only) const {
  auto c = corrections_.find(device);
  if (c == corrections_.end() || after_only == 0) return nullptr;
  for (const Correction& k : c->second)
    if (t <= k.t && after_only == k.after_only_before) return &k;  // (an OOM's own list: its time)
  return nullptr;
}

namespace {

// The remainder, once every part is known.
void settle(Fidelity& f) {
  if (!f.known) return;
  const int64_t parts = int64_t(f.tracked_bytes + f.contexts_bytes + f.modules_bytes + f.pool_cached_bytes +
                                f.cupti_bytes + f.other_processes_bytes);
  f.unexplained_bytes = int64_t(f.used_bytes) - parts;
  f.unexplained_share = f.used_bytes ? double(f.unexplained_bytes) / double(f.used_bytes) : 0;
}

}  // namespace

void FidelityAggregator::finish(TraceReport* rep) const {
  for (OomReport& o : rep->ooms) {
    // The reading of the failure this report is: PyTorch's own OOMs (a memory fraction reached)
    // have none, and sit between the driver's in time.
    const Reading* x = nullptr;
    for (const Reading& r : ooms_.items())
      if (r.t == o.t_ns) x = &r;
    o.fidelity = explain(x ? *x : Reading{}, o.t_ns, true, rep->kernels);
    if (o.pool_driver) {
      o.fidelity.pool_cached_bytes = o.pool_cached_bytes;
      o.fidelity.pool_cached_source = "driver";
    }
    if (o.nvml) {
      o.fidelity.other_processes_known = true;
      o.fidelity.other_processes_t_ns = o.t_ns;
      for (const GpuProcess& g : o.other_processes)
        if (g.bytes != kNvmlNotAvailable) o.fidelity.other_processes_bytes += g.bytes;
    }
    // A first context's cost, measured only after it was made, may hold other processes'
    // memory of that moment. The NVML list that took them off it (rule 14) may come after this
    // OOM: the OOM counts the cost as that list left it, measured.
    if (const Correction* k = correction_after(o.device, o.t_ns, o.code_after_only_bytes)) {
      o.code_bytes -= std::min(k->taken, o.code_bytes);
      o.context_bytes -= std::min(k->taken, o.context_bytes);
      o.code_after_only_bytes = 0;
      o.fidelity.contexts_bytes -= std::min(k->taken, o.fidelity.contexts_bytes);
    }
    // Where NVML's figure for this process (or, NVML blind to it, the bound on a context's cost)
    // bounds a context's cost, the breakdown counts what it bounds (split_unattributed), so that
    // memory is not counted twice.
    split_unattributed(o);
    o.fidelity.contexts_bytes -= std::min(o.code_not_own_bytes, o.fidelity.contexts_bytes);
    settle(o.fidelity);
  }
  for (DevicePeak& p : rep->peaks) {
    auto it = devs_.find(p.device);
    if (it == devs_.end()) continue;
    const Dev& d = it->second;
    const Reading& before = d.before_peak();
    // The reading at the peak's state, else the nearest one in time.
    const Reading* pick = nullptr;
    bool exact = false;
    if (d.after.valid && d.after.version == d.peak_version) {
      pick = &d.after;
      exact = true;
    } else if (before.valid && d.after.valid) {
      pick = d.peak_t - before.t <= d.after.t - d.peak_t ? &before : &d.after;
    } else if (before.valid || d.after.valid) {
      pick = before.valid ? &before : &d.after;
    }
    if (!pick) continue;
    p.fidelity = explain(*pick, d.peak_t, exact, rep->kernels);
    auto n = nvml_.find(p.device);
    if (n != nvml_.end() && !n->second.empty()) {  // NVML's list nearest the reading
      const Nvml* best = &n->second[0];
      for (const Nvml& v : n->second)
        if (std::llabs(int64_t(v.t - pick->t)) < std::llabs(int64_t(best->t - pick->t))) best = &v;
      p.fidelity.other_processes_known = true;
      p.fidelity.other_processes_bytes = best->bytes;
      p.fidelity.other_processes_t_ns = best->t;
      // The bound an OOM's NVML row set on the same first-context costs holds here too.
      bool bounded = false;
      for (const OomReport& o : rep->ooms)
        if (o.device == p.device && o.nvml_self && pick->after_only && o.code_after_only_bytes == pick->after_only) {
          const uint64_t over = o.code_after_only_bytes - std::min(o.first_context_bytes, o.code_after_only_bytes);
          p.fidelity.contexts_bytes -= std::min(over, p.fidelity.contexts_bytes);
          bounded = true;
          break;
        }
      // Else a reading taken between a first context and the NVML list that took the other
      // processes off its cost (rule 14) counts the cost as that list left it.
      if (const Correction* k = bounded ? nullptr : correction_after(p.device, pick->t, pick->after_only))
        p.fidelity.contexts_bytes -= std::min(k->taken, p.fidelity.contexts_bytes);
    }
    settle(p.fidelity);
  }
}

}  // namespace vt::analyzer
