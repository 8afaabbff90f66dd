// See report_render.h: the JSON form.
#include <cstdio>

#include "record_json.h"
#include "cuda_result.h"
#include "oom_verdict.h"
#include "report_render.h"
#include "torch_render.h"

namespace vt::analyzer {

namespace {

using nlohmann::json;

json group_json(const SiteGroup& g) {
  json j = {{"bytes", g.bytes}, {"count", g.count}, {"share", g.share}, {"kind", g.kind},
            {"device", g.device}, {"stack", stack_json(g.stack)}};
  if (!g.threads.empty()) j["threads"] = threads_json(g.threads);  // (only when several threads allocated)
  return j;
}

json groups_json(const std::vector<SiteGroup>& v) {
  json a = json::array();
  for (const SiteGroup& g : v) a.push_back(group_json(g));
  return a;
}

json growth_json(const std::vector<GrowthSite>& v) {
  json a = json::array();
  for (const GrowthSite& g : v) {
    json j = group_json(g.site);
    j["growth_bytes"] = g.growth_bytes;
    j["new_highs"] = g.new_highs;
    j["first_t_ns"] = g.first_t_ns;
    j["last_t_ns"] = g.last_t_ns;
    if (!g.site.threads.empty()) j["threads_at_site"] = g.threads_at_site;
    a.push_back(j);
  }
  return a;
}

json activity_json(const ActivityAt& a) {
  auto kernels = [](const std::vector<KernelRef>& v) {
    json arr = json::array();
    for (const KernelRef& k : v)
      arr.push_back({{"name", k.name}, {"device", k.device}, {"stream", k.stream}, {"start_ns", k.start_ns}, {"end_ns", k.end_ns}});
    return arr;
  };
  return {{"running_kernels", kernels(a.running)}, {"last_kernels", kernels(a.last_before)}, {"nvtx", a.nvtx}};
}

// The device's used memory explained (docs/report-schema.md, "fidelity"); null without a driver reading.
// `moment_tracked`: the tracked device memory at the moment explained.
json fidelity_json(const Fidelity& f, uint64_t moment_tracked) {
  if (!f.known) return nullptr;
  json j = {{"t_ns", f.t_ns}, {"at_instant", f.at_instant}, {"offset_ns", f.offset_ns},
          {"tracked_change_bytes", f.offset_ns < 0 ? int64_t(moment_tracked - f.tracked_bytes)
                                                   : int64_t(f.tracked_bytes - moment_tracked)},
          {"total_bytes", f.total_bytes}, {"used_bytes", f.used_bytes},
          {"tracked_bytes", f.tracked_bytes}, {"tracked_by_kind", f.tracked_by_kind},
          {"contexts_bytes", f.contexts_bytes}, {"modules_bytes", f.modules_bytes},
          {"pool_cached_bytes", f.pool_cached_bytes}, {"pool_cached_source", f.pool_cached_source},
          {"cupti_buffers_bytes", f.cupti_known ? json(f.cupti_bytes) : json(nullptr)},
          {"other_processes_bytes", f.other_processes_known ? json(f.other_processes_bytes) : json(nullptr)},
          {"other_processes_t_ns", f.other_processes_known ? json(f.other_processes_t_ns) : json(nullptr)},
          {"unexplained_bytes", f.unexplained_bytes}, {"unexplained_share", f.unexplained_share}};
  if (!f.cupti_basis.empty()) j["cupti_buffers_basis"] = f.cupti_basis;  // how the CUPTI figure was reached
  return j;
}

json peak_json(const TraceReport& r) {
  json by_device = json::array();
  for (const DevicePeak& p : r.peaks)
    by_device.push_back({{"device", p.device}, {"bytes", p.bytes}, {"t_ns", p.t_ns}, {"by_kind", p.by_kind},
                         {"live_set", groups_json(p.live_set)},
                         {"live_set_left_out", {{"sites", p.left_out_sites}, {"bytes", p.left_out_bytes}}},
                         {"activity", activity_json(p.activity)},
                         {"fidelity", fidelity_json(p.fidelity, p.bytes)}});
  json peak = {{"bytes", 0}, {"t_ns", 0}, {"device", -1}, {"live_set", json::array()},
               {"live_set_left_out", {{"sites", 0}, {"bytes", 0}}}};
  if (!r.peaks.empty()) {
    peak = by_device[0];
  }
  peak["by_device"] = by_device;
  peak["pinned_host_bytes"] = r.pinned_host_peak_bytes;
  peak["managed_bytes"] = r.managed_peak_bytes;
  return peak;
}

json leaks_json(const TraceReport& r) {
  json j = {{"bytes", r.leak_bytes}, {"count", r.leak_count}, {"end", r.end}, {"groups", groups_json(r.leaks)},
            {"teardown", {{"bytes", r.teardown_bytes}, {"count", r.teardown_count}, {"groups", groups_json(r.teardown)}}},
            {"growth", growth_json(r.growth)}};
  if (r.torch_segment_growth) j["growth_pytorch_segments_not_listed"] = r.torch_segment_growth;
  if (const TorchCacheAtExit& c = r.torch_cache_at_exit; c.known)
    j["pytorch_cache"] = {{"reserved_bytes", c.reserved_bytes}, {"segments", c.segments},
                          {"allocated_bytes", c.allocated_bytes}, {"cached_bytes", c.cached_bytes()},
                          {"cublas_workspace_bytes", c.workspace_bytes}};
  if (const TorchHostCacheAtExit& h = r.torch_host_cache_at_exit; h.count)
    j["pytorch_host_cache"] = {{"bytes", h.bytes}, {"count", h.count}};
  return j;
}

json frag_json(const TraceReport& r) {
  const Fragmentation& f = r.fragmentation;
  json pools = json::array();
  for (const PoolFragmentation& p : f.pools)
    pools.push_back({{"pool", p.pool}, {"device", p.device}, {"footprint_bytes", p.footprint_bytes},
                     {"live_bytes", p.live_bytes}, {"largest_free_gap_bytes", p.largest_free_gap_bytes},
                     {"fragmentation", p.fragmentation},
                     {"worst", p.worst_t_ns ? json{{"t_ns", p.worst_t_ns}, {"footprint_bytes", p.worst_footprint_bytes},
                                                   {"live_bytes", p.worst_live_bytes},
                                                   {"largest_free_gap_bytes", p.worst_largest_free_gap_bytes},
                                                   {"fragmentation", p.worst_fragmentation}}
                                            : json(nullptr)}});
  json flushes = json::array();
  for (const CacheFlush& c : f.cache_flushes)
    flushes.push_back({{"t_ns", c.t_ns}, {"requested_bytes", c.requested_bytes}, {"freed_bytes", c.freed_bytes},
                       {"freed_count", c.freed_count}, {"retry_succeeded", c.retry_succeeded}});
  return {{"vmm", {{"reserved_bytes_at_peak", f.vmm_reserved_bytes_at_peak}, {"mapped_bytes_at_peak", f.vmm_mapped_bytes_at_peak},
                   {"reserved_bytes_max", f.vmm_reserved_bytes_max}, {"mapped_bytes_max", f.vmm_mapped_bytes_max},
                   {"unmapped_fraction_at_peak", f.vmm_reserved_bytes_at_peak
                                                      ? 1.0 - double(f.vmm_mapped_bytes_at_peak) / double(f.vmm_reserved_bytes_at_peak)
                                                      : 0.0}}},
          {"pools", pools},
          {"cache_flushes", flushes}};
}

json frag_json_with_torch(const TraceReport& r) {
  json j = frag_json(r);
  if (r.torch.figures()) j["pytorch"] = torch_frag_json(r.torch);  // each device's cache at its most fragmented
  return j;
}

json procs_json(const std::vector<GpuProcess>& v) {
  json a = json::array();
  for (const GpuProcess& g : v) a.push_back({{"pid", g.pid}, {"name", g.name}, {"bytes", g.bytes}});
  return a;
}

json ooms_json(const TraceReport& r) {
  json a = json::array();
  for (const OomReport& o : r.ooms) {
    json causes = json::array();
    for (const Cause& c : o.causes)
      causes.push_back({{"code", c.code}, {"score", c.score}, {"summary", c.summary}, {"evidence", c.evidence}});
    a.push_back({{"t_ns", o.t_ns}, {"op", o.op}, {"result", o.result}, {"result_name", cuda_result_name(o.result)}, {"device", o.device},
                 {"requested_bytes", o.requested_bytes}, {"device_free_bytes", o.device_free_bytes},
                 {"device_total_bytes", o.device_total_bytes}, {"process_device_bytes", o.process_device_bytes},
                 {"process_by_kind", o.process_by_kind}, {"not_attributable_bytes", o.not_attributable_bytes},
                 {"pool_cached_bytes", o.pool_cached_bytes}, {"pool_largest_free_gap_bytes", o.pool_largest_free_gap_bytes},
                 {"pool_figures", o.pool_driver ? "driver" : "model"},
                 {"pool_reserved_bytes", o.pool_driver ? json(o.pool_reserved_bytes) : json(nullptr)},
                 {"pool_used_bytes", o.pool_driver ? json(o.pool_used_bytes) : json(nullptr)},
                 {"vmm_unmapped_bytes", o.vmm_unmapped_bytes},
                 {"graph_pool_reserved_bytes", o.graph_pool_reserved_bytes},
                 {"graph_pool_used_bytes", o.graph_pool_used_bytes},
                 {"code_bytes", o.code_bytes}, {"code_after_only_bytes", o.code_after_only_bytes},
                 {"nvml_self_bytes", o.nvml_self ? json(o.nvml_self_bytes) : json(nullptr)},
                 {"own_cached_bytes", o.own_cached_bytes}, {"own_code_bytes", o.own_code_bytes},
                 {"own_code_basis", o.own_code_basis}, {"elsewhere_bytes", o.elsewhere_bytes},
                 {"elsewhere_unsure_bytes", o.elsewhere_unsure_bytes},
                 {"stack", stack_json(o.stack)}, {"top_holders", groups_json(o.top_holders)},
                 {"grew_before", growth_json(o.grew_before)}, {"verdict", o.verdict}, {"causes", causes},
                 {"nvml", o.nvml}, {"nvml_blind", nvml_blind(o)}, {"other_processes", procs_json(o.other_processes)},
                 {"activity", activity_json(o.activity)},
                 {"remedies", o.remedies}, {"fidelity", fidelity_json(o.fidelity, o.process_device_bytes)}});
    if (o.torch) a.back()["torch"] = torch_oom_json(o.torch_info);  // only PyTorch's OOMs have it
    if (!o.autograd_thread.empty()) a.back()["autograd_thread"] = o.autograd_thread;  // only OOMs in backward
    if (!o.whatif.empty()) {  // only where a remedy names a setting and the replay reproduces the OOM
      json w = json::array();
      for (const OomReport::WhatifCitation& c : o.whatif)
        w.push_back({{"alloc_conf", c.alloc_conf}, {"peak_reserved_bytes", c.peak_reserved_bytes},
                     {"run_peak_reserved_bytes", c.run_peak_reserved_bytes}, {"would_happen", c.would_happen}});
      a.back()["whatif"] = w;
    }
  }
  return a;
}

json graphs_json(const std::vector<GraphDevice>& graphs) {
  json a = json::array();
  for (const GraphDevice& g : graphs)
    a.push_back({{"device", g.device},
                 {"pool_reserved_bytes", g.pool_reserved_bytes},
                 {"pool_used_bytes", g.pool_used_bytes},
                 {"pool_reserved_max_bytes", g.pool_reserved_max_bytes},
                 {"pool_reserved_at_peak_bytes", g.pool_reserved_at_peak_bytes},
                 {"memory_nodes", g.nodes},
                 {"memory_node_bytes", g.node_bytes},
                 {"captured_allocations", g.captured},
                 {"captured_bytes", g.captured_bytes}});
  return a;
}

json sharing_json(const SharingReport& s) {
  return {{"imported", {{"bytes", s.imported_bytes}, {"count", s.imported_count}, {"max_bytes", s.imported_max_bytes},
                        {"groups", groups_json(s.imported)}}},
          {"exported", {{"calls", s.exports}, {"bytes", s.shared_bytes}, {"count", s.shared_count},
                        {"groups", groups_json(s.shared)}}},
          {"multicast", {{"objects", s.multicast_objects}, {"bytes", s.multicast_bytes}, {"live", s.multicast_live},
                         {"live_bytes", s.multicast_live_bytes}, {"bound_bytes", s.multicast_bound_bytes},
                         {"groups", groups_json(s.multicast)}}}};
}

json allocations_json(const AllocationStats& a) {
  json largest = json::array();
  for (const LargeAllocation& x : a.largest)
    largest.push_back({{"bytes", x.bytes}, {"t_ns", x.t_ns}, {"device", x.device}, {"kind", x.kind}, {"op", x.op},
                       {"freed", x.freed}, {"freed_t_ns", x.freed_t_ns}, {"stack", stack_json(x.stack)}});
  json hist = json::array();
  for (const SizeBucket& b : a.histogram)
    hist.push_back({{"min_bytes", b.min_bytes}, {"max_bytes", b.max_bytes ? json(b.max_bytes) : json(nullptr)},
                    {"count", b.count}, {"bytes", b.bytes}});
  return {{"count", a.count}, {"bytes", a.bytes}, {"freed", a.freed}, {"largest", largest}, {"size_histogram", hist}};
}

json live_at_json(const LiveAt& l) {
  json devices = json::array();
  for (const LiveAt::Device& d : l.devices)
    devices.push_back({{"device", d.device}, {"bytes", d.device_bytes}, {"pinned_host_bytes", d.pinned_host_bytes},
                       {"managed_bytes", d.managed_bytes}});
  json j = {{"t_ns", l.t_ns}, {"past_end", l.past_end}, {"bytes", l.device_bytes}, {"by_device", devices},
            {"live_set", groups_json(l.live_set)}};
  if (!l.mark.empty()) {
    j["mark"] = l.mark;
    j["mark_found"] = l.mark_found;
  }
  return j;
}

json snapshots_json(const Snapshots& s) {
  json at = json::array();
  for (const Snapshot& x : s.at) {
    json devices = json::array(), sites = json::array();
    for (const Snapshot::Device& d : x.devices) devices.push_back({{"device", d.device}, {"bytes", d.bytes}});
    for (const Snapshot::Site& site : x.sites)
      sites.push_back({{"stack_id", site.stack_id}, {"device", site.device}, {"kind", site.kind}, {"bytes", site.bytes},
                       {"count", site.count}});
    at.push_back({{"t_ns", x.t_ns}, {"until_ns", x.until_ns}, {"by_device", devices}, {"total_bytes", x.total_bytes}, {"sites", sites}});
  }
  json stacks = json::object();
  for (const auto& [id, frames] : s.stacks) stacks[std::to_string(id)] = stack_json(frames);
  return {{"interval_ns", s.interval_ns}, {"at", at}, {"stacks", stacks}};
}

json trace_json(const TraceReport& r) {
  json p = process_json(r.process);
  p["path"] = r.path;
  p["events"] = r.events;
  p["failed_events"] = r.failed_events;
  p["unmatched_frees"] = r.unmatched_frees;
  p["first_t_ns"] = r.first_t_ns;
  p["last_t_ns"] = r.last_t_ns;
  p["partial"] = r.partial;
  p["problems"] = r.problems;
  p["damage"] = r.damage;
  return p;
}

// ---- the sections: one renderer each, in kSections' order (report_render.h) ----------------

void peak_part(json& j, const TraceReport& r) {
  j["peak"] = peak_json(r);
  json regions = json::array();
  for (const RegionReport& g : r.regions) {
    json region = {{"name", g.name}, {"t_begin_ns", g.t_begin}, {"t_end_ns", g.t_end}, {"closed", g.closed},
                   {"start_bytes", g.start_bytes}, {"end_bytes", g.end_bytes}, {"peak_bytes", g.peak_bytes},
                   {"peak_above_start_bytes", g.peak_bytes - g.start_bytes}, {"t_peak_ns", g.t_peak}};
    // PyTorch's allocated bytes (its tensors) inside the region, or null without its block layer.
    region["allocated"] = g.tensors ? json{{"start_bytes", g.tensor_start_bytes}, {"end_bytes", g.tensor_end_bytes},
                                           {"peak_bytes", g.tensor_peak_bytes},
                                           {"peak_above_start_bytes", g.tensor_peak_bytes - g.tensor_start_bytes},
                                           {"t_peak_ns", g.t_tensor_peak}}
                                    : json(nullptr);
    regions.push_back(std::move(region));
  }
  j["regions"] = regions;
  json phases = json::array();
  for (const PhaseRow& p : r.phases)
    phases.push_back({{"name", p.name}, {"count", p.count}, {"max_peak_bytes", p.max_peak_bytes},
                      {"max_growth_bytes", p.max_growth_bytes}});
  j["phases"] = phases;
  if (r.live_at.asked) {
    j["live_at"] = live_at_json(r.live_at);
    if (r.torch.live_at_taken) j["live_at"]["torch"] = torch_live_at_json(r.torch.live_at);
  }
  if (!r.graphs.empty()) j["graphs"] = graphs_json(r.graphs);  // only with graphs
}

void leaks_part(json& j, const TraceReport& r) {
  j["leaks"] = leaks_json(r);
  if (r.sharing.present()) j["sharing"] = sharing_json(r.sharing);  // only with sharing
}

void frag_part(json& j, const TraceReport& r) { j["fragmentation"] = frag_json_with_torch(r); }

void oom_part(json& j, const TraceReport& r) {
  j["ooms"] = ooms_json(r);
  if (r.ooms_omitted) j["ooms_omitted"] = r.ooms_omitted;  // (between the first ones and the latest)
}

using SectionJson = void (*)(json&, const TraceReport&);
constexpr std::pair<Section, SectionJson> kSectionJson[] = {
    {Section::peak, peak_part}, {Section::leaks, leaks_part}, {Section::frag, frag_part}, {Section::oom, oom_part}};
static_assert(in_section_order(kSectionJson), "a JSON renderer for every section, in kSections' order");

// What only the whole report has: the timeline, snapshots, PyTorch's summary, the interception's
// findings, allocation sizes and kernels.
void whole_part(json& j, const TraceReport& r) {
  json tl = json::array();
  for (const TimelineSeries& s : r.timeline) tl.push_back({{"device", s.device}, {"kind", s.kind}, {"points", s.points}});
  j["timeline"] = tl;
  j["snapshots"] = snapshots_json(r.snapshots);
  if (r.torch.present) j["torch"] = torch_json(r.torch);  // only where PyTorch was seen
  // Only when something escaped the hooks.
  if (r.interception.notable()) j["interception"] = interception_json(r.interception);
  j["allocations"] = allocations_json(r.allocations);
  const KernelRecording& k = r.kernels;
  j["kernels"] = {{"recorded", k.recorded}, {"status", k.status}, {"kernels", k.kernels},
                  {"coverage", {{"cupti_allocations", k.cupti_allocations}, {"matched", k.matched},
                                {"fraction", k.coverage}, {"missed", k.missed}}}};
  if (!k.activity_buffers.empty())  // traces whose recorder said how CUPTI's buffers were set up
    j["kernels"]["buffers"] = {{"activity_buffers", k.activity_buffers}, {"device_buffers_per_context", k.device_buffers},
                               {"device_buffer_bytes", k.device_buffer_bytes},
                               {"device_bytes_per_context", k.device_buffers * k.device_buffer_bytes},
                               {"lost_records", k.lost_records}, {"refused_buffers", k.refused_buffers}};
}

}  // namespace

json report_json(const TraceReport& r, Sections sections) {
  std::vector<TraceProblem> problems;
  for (const std::string& m : r.damage) problems.push_back({r.path, r.unreadable, m});
  json j = {{"schema", kReportSchema}, {"trace", trace_json(r)}, {"problems", problems_json(problems)}};
  for (const auto& [id, render] : kSectionJson)
    if (sections.has(id)) render(j, r);
  if (sections.is_whole()) whole_part(j, r);
  return j;
}


json problems_json(const std::vector<TraceProblem>& v) {
  json a = json::array();
  for (const TraceProblem& p : v)
    a.push_back({{"path", p.path}, {"kind", p.unreadable ? "unreadable" : "damaged"}, {"message", p.message}});
  return a;
}

json interception_json(const InterceptionReport& x) {
  json gaps = json::array();
  for (const LookupGap& g : x.unhooked)
    gaps.push_back({{"symbol", g.symbol}, {"category", g.category}, {"version", g.version}, {"flags", g.flags}});
  json isolated = json::array();
  for (const IsolatedOpen& o : x.isolated)
    isolated.push_back({{"path", o.path}, {"how", o.other_namespace ? "dlmopen namespace" : "RTLD_DEEPBIND"},
                        {"mode", o.mode}, {"caught", o.caught}});
  return {{"lookups_reached", x.lookups_reached}, {"first_lookup", x.first_lookup}, {"cudart_loaded", x.cudart_loaded},
          {"cudart_unreached", x.cudart_unreached}, {"unhooked", gaps}, {"isolated_libraries", isolated}};
}

nlohmann::json summary_json(const TraceReport& r) {
  nlohmann::json j = report_json(r, Sections::none());
  j["schema"] = kSummarySchema;
  const DevicePeak* pk = r.peaks.empty() ? nullptr : &r.peaks[0];
  j["peak"] = {{"bytes", pk ? pk->bytes : 0}, {"device", pk ? pk->device : -1}, {"t_ns", pk ? pk->t_ns : 0}};
  j["leaks"] = {{"end", r.end}, {"bytes", r.leak_bytes}, {"count", r.leak_count}};
  nlohmann::json ooms = nlohmann::json::array();
  for (const OomReport& x : r.ooms)
    ooms.push_back({{"t_ns", x.t_ns}, {"device", x.device}, {"requested_bytes", x.requested_bytes}, {"result", x.result},
                    {"result_name", cuda_result_name(x.result)}, {"verdict", x.verdict}});
  j["ooms"] = ooms;
  j["allocations"] = allocations_json(r.allocations);
  return j;
}


json job_summary_json(const JobReport& job) {
  json j = job_json(job, Sections::none());
  j["schema"] = kSummarySchema;
  json reports = json::array();
  for (const TraceReport& t : job.traces) reports.push_back(summary_json(t));
  j["reports"] = reports;
  return j;
}

json job_json(const JobReport& job, Sections sections, bool reports) {
  json ranks = json::array();
  for (const RankRow& row : job.ranks)
    ranks.push_back({{"rank", row.rank}, {"pid", row.pid}, {"host", row.host}, {"path", row.path},
                     {"peak_bytes", row.peak_bytes}, {"leak_bytes", row.leak_bytes}, {"ooms", row.ooms},
                     {"verdict", row.verdict}, {"damaged", row.damaged}, {"command", row.command}, {"end", row.end}});
  json traces = json::array();
  size_t damaged = 0;
  for (size_t i = 0; i < job.traces.size(); ++i) {
    const TraceReport& t = job.traces[i];
    // From summaries: each rank's own report, as its node wrote it (job_summaries.cpp).
    if (reports) traces.push_back(i < job.summaries.size() ? json::parse(job.summaries[i]) : report_json(t, sections));
    damaged += t.damaged();
  }
  return {{"schema", kReportSchema},
          {"job", {{"traces", job.traces.size()}, {"damaged", damaged}, {"unreadable", job.unreadable.size()},
                   {"max_peak_bytes", job.max_peak}, {"min_peak_bytes", job.min_peak},
                   {"mean_peak_bytes", job.mean_peak}, {"imbalance", job.imbalance}}},
          {"problems", problems_json(job_problems(job))},
          {"ranks", ranks},
          {"reports", traces}};
}

}  // namespace vt::analyzer
