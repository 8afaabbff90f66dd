// See report_render.h: the text form, for people. Sizes in human units; times from the start of
// the trace, in the unit and with the precision the run's length needs; CUresults by name;
// counted nouns in the singular for one; GPUs as "GPU N" and memory kinds in words.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cuda_result.h"
#include "text_words.h"
#include "byte_size.h"
#include "oom_verdict.h"
#include "report_render.h"
#include "terminal_escape.h"
#include "torch_render.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

// Every string that came from the trace (or from a verdict that quotes one) goes through e().
std::string e(const std::string& s) { return terminal_escape(s); }

std::string pct(double v) {
  char b[16];
  snprintf(b, sizeof b, "%.0f%%", v * 100);
  return b;
}

// The user's frames first (user_frames.h), the machinery folded into one marker; `native`: all.
void stack_lines(std::ostringstream& o, const std::vector<Frame>& full, const char* indent, bool native, size_t max = 8) {
  size_t hidden = 0;
  std::vector<Frame> stack = user_stack(full, native, &hidden);
  size_t shown = 0;
  for (const Frame& f : stack) {
    if (shown++ == max) {
      o << indent << "... " << count(stack.size() - max, "more frame") << "\n";
      break;
    }
    o << indent << (f.python ? "[py] " : "") << e(f.function);
    if (!f.file.empty()) o << "  " << e(f.file) << ":" << f.line;
    else if (!f.python) {
      char b[32];
      snprintf(b, sizeof b, "+0x%llx", static_cast<unsigned long long>(f.offset));
      o << "  " << e(f.module.substr(f.module.rfind('/') + 1)) << b;
    }
    if (f.inlined) o << " (inlined)";
    o << "\n";
  }
  if (hidden) o << indent << "... " << hidden << " native frame" << (hidden == 1 ? "" : "s") << " (--native shows them)\n";
  if (full.empty()) o << indent << "(no stack recorded)\n";
}

void groups(std::ostringstream& o, const std::vector<SiteGroup>& all, bool native) {
  int i = 0;
  std::vector<SiteGroup> v = merge_shown(all, native);
  for (const SiteGroup& g : v) {
    o << "  #" << ++i << "  " << format_bytes(g.bytes) << " in " << count(g.count, "allocation") << " (" << pct(g.share)
      << ", " << e(memory_kind(g.kind)) << (g.device >= 0 ? ", GPU " + std::to_string(g.device) : "") << ")\n";
    if (!g.threads.empty()) o << "      allocated on " << e(threads_words(g.threads)) << "\n";
    stack_lines(o, g.stack, "      ", native);
  }
  if (v.empty()) o << "  (none)\n";
}

void activity_lines(std::ostringstream& o, const ActivityAt& a, const char* indent) {
  if (!a.nvtx.empty()) {
    o << indent << "inside NVTX:";
    for (const std::string& n : a.nvtx) o << " " << e(n);
    o << "\n";
  }
  for (const KernelRef& k : a.running) o << indent << "running: " << e(k.name) << " (stream " << k.stream << ")\n";
  if (a.running.empty() && !a.last_before.empty()) {
    o << indent << "last kernels before:";
    for (size_t i = 0; i < a.last_before.size() && i < 3; ++i) o << (i ? ", " : " ") << e(a.last_before[i].name);
    o << "\n";
  }
}

// What escaped the hooks (the lookup safety net): said in the header, since every figure below
// may miss it.
void interception_lines(std::ostringstream& o, const InterceptionReport& x) {
  if (x.cudart_unreached)
    o << "  warning: libcudart was loaded but no driver lookup reached vramtrace: the CUDA runtime found the "
         "driver another way, and its memory calls may be missing from this report (docs/interception.md)\n";
  std::vector<const IsolatedOpen*> missed;
  size_t caught = 0;
  for (const IsolatedOpen& i : x.isolated) {
    if (i.caught) ++caught;
    else missed.push_back(&i);
  }
  if (caught)
    o << "  " << caught << (caught == 1 ? " library" : " libraries")
      << " opened with RTLD_DEEPBIND got vramtrace's hooks through its LD_AUDIT module: "
      << (caught == 1 ? "its" : "their") << " calls are in this report\n";
  if (!missed.empty()) {
    const size_t n = missed.size();
    o << "  warning: " << n << (n == 1 ? " library was" : " libraries were")
      << " opened where vramtrace's hooks cannot reach (RTLD_DEEPBIND, or dlmopen into another namespace); "
         "CUDA memory calls made from "
      << (n == 1 ? "it" : "them") << " and the libraries loaded with " << (n == 1 ? "it" : "them")
      << " are not in this report:";
    for (size_t k = 0; k < n && k < 4; ++k)
      o << (k ? ", " : " ") << e(missed[k]->path) << " ("
        << (missed[k]->other_namespace ? "dlmopen namespace" : "RTLD_DEEPBIND") << ")";
    if (n > 4) o << " and " << n - 4 << " more (--format json lists them)";
    o << "\n";
    bool deepbind = false;
    for (const IsolatedOpen* i : missed) deepbind |= !i->other_namespace;
    if (deepbind)
      o << "    to trace them, open them without RTLD_DEEPBIND (Python: leave os.RTLD_DEEPBIND out of "
           "sys.setdlopenflags and of ctypes.CDLL's mode), or run under `vramtrace run --audit` "
           "(LD_AUDIT=libvramtrace_audit.so, docs/interception.md)\n";
  }
  if (x.unhooked.empty()) return;
  o << "  warning: " << x.unhooked.size() << " memory entry point" << (x.unhooked.size() == 1 ? " was" : "s were")
    << " handed out unhooked; what the program did with " << (x.unhooked.size() == 1 ? "it" : "them")
    << " is not in this report:";
  size_t shown = 0;
  for (const LookupGap& g : x.unhooked) {
    if (shown++ == 8) break;
    o << (shown == 1 ? " " : ", ") << e(g.symbol) << " (" << e(g.category);
    if (g.version) o << ", CUDA " << g.version / 1000 << "." << g.version % 1000 / 10;
    o << ")";
  }
  if (x.unhooked.size() > 8) o << " and " << x.unhooked.size() - 8 << " more (--format json lists them)";
  o << "\n";
}

// The device's used memory explained: what nvidia-smi calls used, against what was tracked.
// `moment_tracked`: the tracked device memory at the moment explained. A reading is shown as the
// moment's only when no memory event of this process changed the device between them
// (at_instant); any other is labelled as an earlier or later reading, with what changed since.
void fidelity_lines(std::ostringstream& o, const Fidelity& f, const char* indent, uint64_t moment_tracked) {
  if (!f.known) return;
  if (f.at_instant) {
    o << indent << "used on the GPU (driver: total - free): " << format_bytes(f.used_bytes) << " of "
      << format_bytes(f.total_bytes) << "\n";
  } else {
    // The driver is read at failures and around context and code calls, not at every event.
    const double away = double(f.offset_ns < 0 ? -f.offset_ns : f.offset_ns);
    char off[48];
    if (away < 1e6)
      snprintf(off, sizeof off, "%.0f us", away / 1e3);
    else if (away < 1e9)
      snprintf(off, sizeof off, "%.1f ms", away / 1e6);
    else
      snprintf(off, sizeof off, "%.3f s", away / 1e9);
    const bool earlier = f.offset_ns < 0;
    const uint64_t a = earlier ? f.tracked_bytes : moment_tracked, b = earlier ? moment_tracked : f.tracked_bytes;
    const std::string change = a == b ? "did not change" : std::string("changed by ") + (b > a ? "+" : "-") +
                                                               format_bytes(b > a ? b - a : a - b);
    o << indent << "no driver reading at this moment: the nearest was taken " << off << (earlier ? " before" : " after")
      << " it, and tracked allocations " << change << (earlier ? " since" : " by then") << "; as of then:\n"
      << indent << "used on the GPU then (driver: total - free): " << format_bytes(f.used_bytes) << " of "
      << format_bytes(f.total_bytes) << "\n";
  }
  std::string kinds;
  for (const auto& [k, v] : f.tracked_by_kind) kinds += (kinds.empty() ? "" : ", ") + e(op_kind(k)) + " " + format_bytes(v);
  o << indent << "  tracked allocations " << (f.at_instant ? "" : "then ") << format_bytes(f.tracked_bytes)
    << (kinds.empty() ? "" : " (" + kinds + ")") << "\n";
  o << indent << "  contexts " << format_bytes(f.contexts_bytes) << ", modules and code " << format_bytes(f.modules_bytes)
    << ", kept free by pools " << format_bytes(f.pool_cached_bytes) << " (" << f.pool_cached_source << ")\n";
  o << indent << "  CUPTI buffers "
    << (f.cupti_known ? format_bytes(f.cupti_bytes) + (f.cupti_basis.empty() || !f.cupti_bytes ? "" : " (" + e(f.cupti_basis) + ")")
                      : std::string("not known"))
    << ", other processes " << (f.other_processes_known ? format_bytes(f.other_processes_bytes) + " (NVML)" : std::string("not known"))
    << "\n";
  const uint64_t abs_rest = uint64_t(f.unexplained_bytes < 0 ? -f.unexplained_bytes : f.unexplained_bytes);
  char share[24];
  snprintf(share, sizeof share, "%.1f%%", f.unexplained_share * 100);
  o << indent << "  unexplained " << (f.unexplained_bytes < 0 ? "-" : "") << format_bytes(abs_rest) << " (" << share
    << " of used)\n";
}

void header(std::ostringstream& o, const TraceReport& r) {
  const ProcessInfo& p = r.process;
  o << "vramtrace report: " << e(r.path) << "\n";
  std::string cmd;
  for (const std::string& a : p.argv) cmd += (cmd.empty() ? "" : " ") + a;
  o << "  process " << p.pid << " on " << e(p.hostname) << (p.rank >= 0 ? ", rank " + std::to_string(p.rank) : "")
    << ": " << e(cmd) << "\n";
  for (const DeviceInfo& d : p.devices) o << "  GPU " << d.ordinal << ": " << e(d.name) << ", " << format_bytes(d.total_bytes) << "\n";
  o << "  " << count(r.events, "event") << ", " << r.failed_events << " failed, trace "
    << (!p.closed_cleanly ? "ended without a clean close"
        : p.quick_exit    ? "closed cleanly (the process left through _exit(" + std::to_string(p.exit_status) +
                                "): no exit handlers ran)"
                          : "closed cleanly")
    << "\n";
  for (const std::string& pr : r.problems) o << "  note: " << e(pr) << "\n";
  if (r.kernels.recorded) {
    char cov[64];
    snprintf(cov, sizeof cov, "%.1f%%", r.kernels.coverage * 100);
    o << "  kernels: " << r.kernels.kernels << " recorded; CUPTI saw " << count(r.kernels.cupti_allocations, "allocation")
      << ", interception matched " << cov << "\n";
    const KernelRecording& k = r.kernels;
    if (!k.activity_buffers.empty()) {
      o << "  CUPTI's buffers: activity buffers " << e(k.activity_buffers) << "; device buffers ";
      if (k.device_buffers && k.device_buffer_bytes)
        o << "at most " << k.device_buffers << " x " << format_bytes(k.device_buffer_bytes) << " = "
          << format_bytes(k.device_buffers * k.device_buffer_bytes) << " of device memory per context";
      else
        o << "as CUPTI defaults (up to 250 of ~3 MB per context)";
      if (k.lost_records || k.refused_buffers)
        o << "; " << k.lost_records << (k.lost_records == 1 ? " record" : " records") << " lost, " << k.refused_buffers
          << (k.refused_buffers == 1 ? " buffer request" : " buffer requests") << " refused";
      o << "\n";
    }
  }
  interception_lines(o, r.interception);
}

// ---- the sections: one renderer each, in kSections' order (report_render.h) ----------------

void peak_text(std::ostringstream& o, const TraceReport& r, bool native) {
  if (r.live_at.asked) {
    const LiveAt& l = r.live_at;
    o << "\nLIVE AT " << secs(r, l.t_ns);
    if (!l.mark.empty())
      o << (l.mark_found ? " (the mark '" + e(l.mark) + "')" : " (no mark '" + e(l.mark) + "' began: what was live at the end)");
    else if (l.past_end)
      o << " (after the last event: what was live at the end)";
    o << "\n";
    // PyTorch's own figures first (allocated, reserved, tensors by line), then the driver's view.
    if (r.torch.live_at_taken) torch_live_at_text(o, r.torch.live_at, 10, e);
    if (l.devices.empty()) o << "  nothing was live\n";
    for (const LiveAt::Device& d : l.devices) {
      o << "  GPU " << d.device << ": " << format_bytes(d.device_bytes) << " device memory";
      if (r.torch.live_at_taken) o << " (the driver's view: PyTorch's reserved and memory outside it)";
      if (d.pinned_host_bytes) o << ", " << format_bytes(d.pinned_host_bytes) << " pinned host";
      if (d.managed_bytes) o << ", " << format_bytes(d.managed_bytes) << " managed";
      o << "\n";
    }
    groups(o, l.live_set, native);
  }
  o << "\nPEAK\n";
  if (r.peaks.empty()) o << "  no device memory was allocated\n";
  for (const DevicePeak& p : r.peaks) {
    o << "  GPU " << p.device << ": " << format_bytes(p.bytes) << " at " << secs(r, p.t_ns);
    std::string kinds;
    for (const auto& [k, v] : p.by_kind) kinds += (kinds.empty() ? "" : ", ") + e(op_kind(k)) + " " + format_bytes(v);
    o << (kinds.empty() ? "" : " (" + kinds + ")") << "\n";
    activity_lines(o, p.activity, "  ");
    fidelity_lines(o, p.fidelity, "  ", p.bytes);
    groups(o, p.live_set, native);
    if (p.left_out_sites)
      o << "  ... and " << count(p.left_out_sites, "more call site") << " holding " << format_bytes(p.left_out_bytes)
        << " (--top N shows more)\n";
  }
  if (!r.phases.empty()) {
    o << "  memory by phase (top-level NVTX ranges):\n";
    for (const PhaseRow& p : r.phases)
      o << "    " << format_bytes(p.max_peak_bytes) << " peak  " << e(p.name) << " (" << p.count << "x, up to +"
        << format_bytes(p.max_growth_bytes) << ")\n";
  }
  if (!r.regions.empty()) {
    o << "  regions (peak device memory within each):\n";
    for (const RegionReport& g : r.regions)
      o << "    " << format_bytes(g.peak_bytes) << " (+" << format_bytes(g.peak_bytes - g.start_bytes) << " over its start)  "
        << e(g.name) << (g.closed ? "" : "  [not ended]") << "\n";
  }
  if (r.pinned_host_peak_bytes) o << "  pinned host memory peak: " << format_bytes(r.pinned_host_peak_bytes) << "\n";
  if (r.managed_peak_bytes) o << "  managed memory peak: " << format_bytes(r.managed_peak_bytes) << "\n";
  for (const GraphDevice& g : r.graphs) {
    o << "  CUDA graphs on GPU " << g.device << ": graph pool " << format_bytes(g.pool_reserved_at_peak_bytes)
      << " at the peak, up to " << format_bytes(g.pool_reserved_max_bytes) << " reserved; "
      << format_bytes(g.pool_reserved_bytes) << " reserved (" << format_bytes(g.pool_used_bytes) << " used) at the end\n";
    if (g.nodes)
      o << "    " << count(g.nodes, "graph memory node") << " made (" << format_bytes(g.node_bytes)
        << ", virtual: memory only while a graph holds it)"
        << (g.captured ? ", " + count(g.captured, "allocation") + " of " + format_bytes(g.captured_bytes) +
                             " captured from streams into CUDA graphs"
                       : std::string())
        << "\n";
  }
  if (r.torch.present) torch_text(o, r.torch, secs, r, e);
}

void leaks_text(std::ostringstream& o, const TraceReport& r, bool native) {
  o << "\nLEAKS (" << (r.end == "clean_exit" ? "still allocated at exit"
                      : r.partial      ? "live where the damaged trace stops"
                      : r.end == "running" ? "live now: the process is still running"
                                       : "live when the trace ended: the process was killed or crashed")
    << "): " << format_bytes(r.leak_bytes) << " in " << count(r.leak_count, "allocation") << "\n";
  groups(o, r.leaks, native);
  if (const TorchCacheAtExit& c = r.torch_cache_at_exit; c.known && c.reserved_bytes)
    o << "  not counted as leaks: PyTorch's caching allocator still reserved " << format_bytes(c.reserved_bytes) << " in "
      << count(c.segments, "segment") << ", " << format_bytes(c.cached_bytes())
      << " of it cached (free: empty_cache() would have released it; the exit gives it all back)"
      << (c.workspace_bytes ? ", " + format_bytes(c.workspace_bytes) + " its cuBLAS workspaces (kept for the process's life)"
                            : std::string())
      << "; its other tensors still allocated are in the list above\n";
  if (const TorchHostCacheAtExit& h = r.torch_host_cache_at_exit; h.count)
    o << "  not counted as leaks: PyTorch's pinned host memory cache (its CachingHostAllocator keeps pinned blocks until "
         "exit) holds "
      << format_bytes(h.bytes) << " in " << count(h.count, "allocation") << "\n";
  for (const GraphDevice& g : r.graphs)
    if (g.pool_reserved_bytes)
      o << "  not counted as leaks: GPU " << g.device << "'s CUDA graph pool still holds "
        << format_bytes(g.pool_reserved_bytes) << " (freed with the graphs, or by cuDeviceGraphMemTrim)\n";
  if (r.teardown_bytes)
    o << "  released only by context teardown: " << format_bytes(r.teardown_bytes) << " in "
      << count(r.teardown_count, "allocation") << "\n";
  const SharingReport& sh = r.sharing;
  if (sh.present()) {
    o << "\nSHARING (memory of other processes is not this process's: no leak, not in its peak)\n";
    o << "  imported: " << format_bytes(sh.imported_bytes) << " in " << count(sh.imported_count, "import")
      << " still open at the end, at most " << format_bytes(sh.imported_max_bytes) << " at once\n";
    if (!sh.imported.empty()) groups(o, sh.imported, native);
    if (sh.exports)
      o << "  exported: " << count(sh.shared_count, "allocation") << " of " << format_bytes(sh.shared_bytes)
        << " shared with other processes (" << count(sh.exports, "export call") << ")\n";
    if (!sh.shared.empty()) groups(o, sh.shared, native);
    if (sh.multicast_objects)
      o << "  multicast: " << count(sh.multicast_objects, "object") << " of " << format_bytes(sh.multicast_bytes)
        << " created, " << sh.multicast_live << " left at the end with " << format_bytes(sh.multicast_bound_bytes)
        << " bound\n    (no memory of their own: the memory bound to them is counted where it was created)\n";
    if (!sh.multicast.empty()) groups(o, sh.multicast, native);
  }
  o << "\nGROWTH (call sites whose live bytes kept rising)\n";
  for (const GrowthSite& g : r.growth) {
    // (new highs are counted at the analysis's sampling checkpoints, not per iteration)
    o << "  +" << format_bytes(g.growth_bytes) << " to " << format_bytes(g.site.bytes) << ", a new high at "
      << count(g.new_highs, "sampling checkpoint") << " between " << secs(r, g.first_t_ns) << " and "
      << secs(r, g.last_t_ns) << "\n";
    if (!g.site.threads.empty()) o << "      grew on " << e(growth_threads_words(g.site.threads, g.threads_at_site)) << "\n";
    stack_lines(o, g.site.stack, "      ", native);
  }
  if (r.growth.empty()) o << "  (none)\n";
  if (r.torch_segment_growth)
    o << "  not listed: " << count(r.torch_segment_growth, "call site")
      << " of PyTorch's segments (its reserved memory, which follows its tensors: the PYTORCH section's tensor lines say what grew)\n";
}

void frag_text(std::ostringstream& o, const TraceReport& r, bool) {
  const Fragmentation& f = r.fragmentation;
  o << "\nFRAGMENTATION\n";
  if (f.vmm_reserved_bytes_max)
    o << "  VMM: " << format_bytes(f.vmm_reserved_bytes_at_peak) << " reserved, " << format_bytes(f.vmm_mapped_bytes_at_peak)
      << " mapped at the peak (max " << format_bytes(f.vmm_reserved_bytes_max) << " reserved)\n";
  for (const PoolFragmentation& p : f.pools) {
    o << "  pool " << e(p.pool) << " (GPU " << p.device << "): footprint " << format_bytes(p.footprint_bytes) << ", live "
      << format_bytes(p.live_bytes) << ", largest free gap " << format_bytes(p.largest_free_gap_bytes)
      << ", fragmentation " << pct(p.fragmentation) << (p.worst_t_ns ? " at the end" : "") << "\n";
    if (p.worst_t_ns)
      o << "    at its worst (" << secs(r, p.worst_t_ns) << "): footprint " << format_bytes(p.worst_footprint_bytes)
        << ", live " << format_bytes(p.worst_live_bytes) << ", largest free gap "
        << format_bytes(p.worst_largest_free_gap_bytes) << ", fragmentation " << pct(p.worst_fragmentation) << "\n";
  }
  for (const CacheFlush& c : f.cache_flushes)
    o << "  at " << secs(r, c.t_ns) << " a " << format_bytes(c.requested_bytes) << " request failed; "
      << format_bytes(c.freed_bytes) << " of cached segments were freed and the retry "
      << (c.retry_succeeded ? "succeeded" : "failed") << "\n";
  const bool torch = r.torch.figures() && torch_frag_text(o, r.torch, secs, r);
  if (!f.vmm_reserved_bytes_max && f.pools.empty() && f.cache_flushes.empty() && !torch) o << "  nothing to report\n";
}

void oom_text(std::ostringstream& o, const TraceReport& r, bool native) {
  o << "\nOUT OF MEMORY (" << count(r.oom_count(), "failed allocation") << ")\n";
  int i = 0;
  for (const OomReport& x : r.ooms) {
    if (r.ooms_omitted && size_t(i) + 1 == r.ooms.size()) {  // (the latest, after those left out)
      o << "  ... " << count(r.ooms_omitted, "more failed allocation") << " between, not detailed (the first "
        << r.ooms.size() - 1 << " and the latest are)\n";
      i += int(r.ooms_omitted);
    }
    o << "  #" << ++i << " at " << secs(r, x.t_ns) << ": " << e(x.op) << " of " << format_bytes(x.requested_bytes) << " on GPU "
      << x.device << " failed: " << cuda_result_text(x.result) << "\n";
    // This process's own caches and contexts and code are its own, not "elsewhere"
    // (split_unattributed, oom_verdict.h).
    o << "     GPU: " << format_bytes(x.device_free_bytes) << " free of " << format_bytes(x.device_total_bytes)
      << "; this process: " << format_bytes(x.process_device_bytes) << " live";
    if (x.own_cached_bytes)
      o << ", " << format_bytes(x.own_cached_bytes) << " cached by its pools"
        << (x.pool_largest_free_gap_bytes ? " (largest free gap " + format_bytes(x.pool_largest_free_gap_bytes) + ")" : "");
    if (x.own_code_bytes)
      o << ", " << format_bytes(x.own_code_bytes) << " contexts and code"
        << (x.own_code_basis == "nvml" ? " (NVML's figure for it, less its live and cached memory)"
            : x.code_not_own_bytes
                ? " (a context counted at most " + format_bytes(kContextBytesBound) + ": its cost, " +
                      format_bytes(x.context_bytes) + ", took in other processes' memory NVML cannot show)"
                : "");
    o << "; elsewhere: " << format_bytes(x.elsewhere_bytes);
    if (x.elsewhere_unsure_bytes)
      o << " (up to " << format_bytes(x.elsewhere_unsure_bytes)
        << " of it may be this process's first context, measured only after it was made)";
    o << "\n";
    if (nvml_blind(x))
      o << "     NVML cannot see this process (no row has its pid " << r.process.pid
        << ": a container's PID namespace): it names no other process for sure; what the driver shows used beyond "
           "this process's memory, caches and contexts is elsewhere\n";
    if (x.nvml) {
      o << "     " << (nvml_blind(x) ? "NVML's rows (pids of another namespace, this process's own possibly among them)"
                                   : "other processes on the GPU (NVML)")
        << ":" << (x.other_processes.empty() ? " none" : "") << "\n";
      for (const GpuProcess& g : x.other_processes)
        o << "       pid " << g.pid << " " << (g.name.empty() ? "?" : e(g.name)) << ": " << format_bytes(g.bytes) << "\n";
    }
    fidelity_lines(o, x.fidelity, "     ", x.process_device_bytes);
    activity_lines(o, x.activity, "     ");
    if (x.torch) torch_oom_text(o, x, e);
    o << "     requested at"
      << (x.autograd_thread.empty() ? "" : " (in backward, on PyTorch's autograd thread " + e(x.autograd_thread) + ")")
      << ":\n";
    stack_lines(o, x.stack, "       ", native);
    o << "     VERDICT: " << e(x.verdict) << "\n";
    for (const Cause& c : x.causes) {
      char score[16];
      snprintf(score, sizeof score, "%.2f", c.score);
      o << "       " << e(c.code) << " (" << score << "): " << e(c.summary) << "\n";
    }
    if (!x.torch) o << "     top holders:\n";  // (PyTorch's OOMs: its tensors by line, above)
    size_t shown = 0;
    for (const SiteGroup& g : merge_shown(x.top_holders, native)) {
      if (x.torch || shown++ == 3) break;
      o << "       " << format_bytes(g.bytes) << " in " << count(g.count, "allocation") << ":\n";
      stack_lines(o, g.stack, "         ", native, 4);
    }
    o << "     what to do:\n";
    for (const std::string& m : x.remedies) o << "       - " << e(m) << "\n";
  }
}

using SectionText = void (*)(std::ostringstream&, const TraceReport&, bool native);
constexpr std::pair<Section, SectionText> kSectionText[] = {
    {Section::peak, peak_text}, {Section::leaks, leaks_text}, {Section::frag, frag_text}, {Section::oom, oom_text}};
static_assert(in_section_order(kSectionText), "a text renderer for every section, in kSections' order");

}  // namespace

std::string report_text(const TraceReport& r, Sections sections, bool native) {
  std::ostringstream o;
  header(o, r);
  for (const auto& [id, render] : kSectionText)
    if (sections.has(id)) render(o, r, native);
  return o.str();
}

std::string job_table_text(const JobReport& job) {
  std::ostringstream o;
  size_t damaged = 0;
  for (const TraceReport& t : job.traces) damaged += t.damaged();
  o << "vramtrace job report: " << count(job.traces.size(), "trace");
  if (damaged) o << ", " << damaged << " damaged";
  if (!job.unreadable.empty()) o << ", " << job.unreadable.size() << " unreadable";
  o << "\n";
  std::vector<TraceProblem> problems = job_problems(job);
  if (!problems.empty()) {
    o << "  PROBLEMS (figures from a damaged trace are lower bounds; an unreadable one is left out):\n";
    for (const TraceProblem& p : problems) o << "    " << e(problem_line(p)) << "\n";
  }
  // The end column makes a killed rank stand out; the command says which program each rank ran.
  o << "  rank   pid        peak          leaks         OOMs  end     verdict                  command\n";
  for (const RankRow& r : job.ranks) {
    std::string verdict = r.verdict + (r.damaged ? (r.verdict.empty() ? "[damaged]" : " [damaged]") : "");
    char line[256];
    snprintf(line, sizeof line, "  %-6s %-10llu %-13s %-13s %-5zu %-7s ", r.rank >= 0 ? std::to_string(r.rank).c_str() : "-",
             static_cast<unsigned long long>(r.pid), format_bytes(r.peak_bytes).c_str(), format_bytes(r.leak_bytes).c_str(),
             r.ooms, r.damaged ? "?" : r.end == "clean_exit" ? "exit" : r.end == "running" ? "running" : "KILLED");
    o << line << e(verdict) << std::string(verdict.size() < 24 ? 25 - verdict.size() : 1, ' ') << e(r.command) << "\n";
  }
  size_t unclean = 0;
  for (const RankRow& r : job.ranks) unclean += !r.damaged && r.end == "killed";
  if (unclean)
    o << "  " << (unclean == 1 ? std::string("1 process") : std::to_string(unclean) + " processes") << " ended without a clean close (KILLED: a signal, a crash, or an exec "
      << "before exit handlers ran); its leaks are what was live when it died\n";
  char imb[64];
  snprintf(imb, sizeof imb, "%.2f", job.imbalance);
  o << "  peak: max " << format_bytes(job.max_peak) << ", min " << format_bytes(job.min_peak) << ", mean "
    << format_bytes(job.mean_peak) << "; imbalance (max/mean) " << imb << "\n";
  return o.str();
}

std::string job_text(const JobReport& job, Sections sections, bool native) {
  std::string o = job_table_text(job);
  if (!job.summaries.empty())  // the per-rank details live in the summaries themselves
    return o + "  (from per-rank summaries: each rank's report is its summary file; --format json gathers them)\n";
  for (const TraceReport& t : job.traces) o += "\n" + report_text(t, sections, native);
  return o;
}

}  // namespace vt::analyzer
