// See oom.h.
#include "aggregators/oom.h"

#include <algorithm>

#include "aggregators/site_groups.h"

namespace vt::analyzer {

void OomAggregator::on_oom(const Record& r, const LiveState& live, const LeakAggregator& growth, ActivityStream& acts) {
  OomReport o;
  o.t_ns = r.t_ns;
  o.op = r.op->name;
  o.result = r.result;
  o.device = r.device;
  o.requested_bytes = r.size;
  o.device_free_bytes = r.free_bytes;
  o.device_total_bytes = r.total_bytes;
  o.process_device_bytes = live.bytes(r.device, Bucket::Device);
  o.process_by_kind = bytes_by_kind(live, r.device);
  uint64_t used = r.total_bytes > r.free_bytes ? r.total_bytes - r.free_bytes : 0;
  o.not_attributable_bytes = used > o.process_device_bytes ? used - o.process_device_bytes : 0;
  o.pool_cached_bytes = live.pool_cached_bytes(r.device);
  if (o.pool_cached_bytes)  // (a pass over the live allocations: only when a pool caches memory)
    for (const auto& [key, p] : live.pools())
      if (p.device == r.device) o.pool_largest_free_gap_bytes = std::max(o.pool_largest_free_gap_bytes, p.largest_free_gap(live));
  o.vmm_unmapped_bytes = live.handle_bytes_unmapped(r.device);
  if (r.op->kind == MemKind::Async)
    if (const PoolState* p = live.request_pool(r); p && p->max_size) {
      o.pool_limit_bytes = p->max_size;
      o.pool_limit_held_bytes = p->footprint();
    }
  o.code_bytes = live.code_bytes(r.device, CodeCategory::Context) + live.code_bytes(r.device, CodeCategory::Module);
  o.code_after_only_bytes = std::min(live.code_after_only_bytes(r.device), o.code_bytes);
  o.context_bytes = live.code_bytes(r.device, CodeCategory::Context);
  std::vector<uint64_t> contexts;  // (a context's limits are entries of that context)
  for (const CodeEntry& c : live.code_costs())
    if (c.device == r.device && c.category == CodeCategory::Context &&
        std::find(contexts.begin(), contexts.end(), c.context) == contexts.end())
      contexts.push_back(c.context);
  o.contexts = contexts.size();
  if (const DeviceTotals* d = live.find_device(r.device)) {
    o.graph_pool_reserved_bytes = d->graph_reserved;
    o.graph_pool_used_bytes = d->graph_used;
  }
  o.top_holders = site_groups(live.sites(), r.device, true);
  if (o.top_holders.size() > top_) o.top_holders.resize(top_);
  // What grew, where "grew" means at least 1 MiB or 0.1% of the device.
  uint64_t min_growth = std::max<uint64_t>(1 << 20, r.total_bytes / 1000);
  o.grew_before = growth.grew_before(live, r.t_ns, min_growth);
  if (o.grew_before.size() > top_) o.grew_before.resize(top_);
  o.stack_id = r.stack;
  o.tid = r.tid;
  bool replaced = false;
  ooms_.next(&replaced) = std::move(o);
  if (replaced) acts.move(queries_.back(), r.t_ns);
  else queries_.push_back(ooms_.items().size() > kDetailedOoms ? acts.watch_moving(r.t_ns) : acts.watch(r.t_ns));
}

void OomAggregator::on_gpu_processes(const GpuProcessList& list, uint64_t t) {
  std::vector<OomReport>& ooms = ooms_.items();
  for (auto it = ooms.rbegin(); it != ooms.rend(); ++it)
    if (it->device == list.device && !it->nvml && t >= it->t_ns && t - it->t_ns <= kOomListWindowNs) {
      take_gpu_processes(*it, list, own_pid_);
      return;
    }
}

void OomAggregator::take_gpu_processes(OomReport& o, const GpuProcessList& list, uint64_t own_pid) {
  o.nvml = true;
  o.nvml_rows = list.processes;
  o.other_processes.clear();
  o.nvml_self = false;
  o.nvml_self_bytes = 0;
  for (const GpuProcess& g : list.processes)
    if (g.pid != own_pid) {
      o.other_processes.push_back(g);
    } else if (g.bytes != kNvmlNotAvailable) {  // (none in a MIG instance or unprivileged)
      o.nvml_self = true;
      o.nvml_self_bytes = g.bytes;
    }
}

void OomAggregator::on_pool_usage(const PoolUsageList& list) {
  std::vector<OomReport>& ooms = ooms_.items();
  for (auto it = ooms.rbegin(); it != ooms.rend(); ++it)
    if (it->device == list.device && !it->pool_driver) {
      it->pool_driver = true;
      uint64_t reserved = 0, used = 0;
      for (const PoolUsage& p : list.pools) {
        reserved += p.reserved;
        used += std::min(p.used, p.reserved);
      }
      it->pool_reserved_bytes = reserved;
      it->pool_used_bytes = used;
      it->pool_cached_bytes = reserved - used;  // the verdict's figure from here on
      return;
    }
}

}  // namespace vt::analyzer
