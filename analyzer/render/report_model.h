// What a report says, as plain data: filled by analysis.cpp, rendered by report_json.cpp and
// report_text.cpp. Field meanings and formulas: docs/metrics.md; JSON names: docs/report-schema.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "symbolizer.h"
#include "torch_model.h"
#include "trace_reader.h"

namespace vt::analyzer {

struct SiteGroup {  // memory grouped by call stack
  uint64_t bytes = 0;
  uint64_t count = 0;
  double share = 0;  // of the total it belongs to
  uint32_t stack_id = 0;
  std::string kind;  // bucket name
  int device = -1;
  std::vector<Frame> stack;
  // Who allocated them, biggest first, when more than one thread of the process allocated (leaks,
  // growth: for growth, each thread's own growth there); empty otherwise.
  std::vector<ThreadShare> threads;
};

struct KernelRef {  // a kernel recorded by CUPTI
  std::string name;  // demangled
  uint32_t device = 0, stream = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

// What the GPU was doing at an instant (the peak, a failure): needs kernel activity (CUPTI).
struct ActivityAt {
  std::vector<KernelRef> running;      // kernels whose [start, end) contains the instant
  std::vector<KernelRef> last_before;  // the latest kernels started before it
  std::vector<std::string> nvtx;       // enclosing NVTX ranges, outermost first
};

// What a device's used memory was made of at one instant, in the terms of nvidia-smi's "used"
// against what vramtrace tracked (aggregators/fidelity.h; docs/metrics.md, "Fidelity").
struct Fidelity {
  bool known = false;      // a driver reading was found (none: no figure below is set)
  uint64_t t_ns = 0;       // when the driver was read
  bool at_instant = true;  // the reading is of the instant explained; else the nearest one (offset_ns)
  int64_t offset_ns = 0;   // reading time - the instant explained
  uint64_t total_bytes = 0, used_bytes = 0;  // the driver's: total, and total - free
  std::map<std::string, uint64_t> tracked_by_kind;  // at the reading
  uint64_t tracked_bytes = 0;
  uint64_t contexts_bytes = 0, modules_bytes = 0;  // format/accounting.h, rule 14
  uint64_t pool_cached_bytes = 0;                  // free memory kept by stream-ordered pools
  std::string pool_cached_source;                  // "driver" (read at the failure) or "model"
  bool cupti_known = false;
  uint64_t cupti_bytes = 0;  // CUPTI's device buffers (an upper bound: cupti_basis)
  std::string cupti_basis;   // how cupti_bytes was reached ("" when not known)
  bool other_processes_known = false;  // NVML's list
  uint64_t other_processes_bytes = 0;
  uint64_t other_processes_t_ns = 0;   // when NVML was asked
  int64_t unexplained_bytes = 0;       // used - everything above (negative: counted twice somewhere)
  double unexplained_share = 0;        // of used
};

struct DevicePeak {
  int device = -1;
  uint64_t bytes = 0;
  uint64_t t_ns = 0;
  std::map<std::string, uint64_t> by_kind;  // op kinds at the peak: device, async, vmm_physical, array
  std::vector<SiteGroup> live_set;
  uint64_t left_out_sites = 0, left_out_bytes = 0;  // the call sites past --top, and what they held
  ActivityAt activity;
  Fidelity fidelity;  // the device's used memory explained at (or nearest) the peak
};

struct TimelineSeries {
  int device = -1;
  std::string kind;
  std::vector<std::pair<uint64_t, uint64_t>> points;  // (t_ns, bytes), max-preserving downsample
};

struct GrowthSite {
  SiteGroup site;  // bytes = its highest live bytes; count = its allocations live now (end or failure)
  uint64_t growth_bytes = 0;
  int new_highs = 0;       // checkpoints at which it reached a new high
  uint64_t first_t_ns = 0, last_t_ns = 0;
  uint32_t threads_at_site = 0;  // with site.threads: the threads that allocated there
};

struct Cause {
  std::string code;  // a verdict of the table (verdicts.h)
  double score = 0;  // 0..1+, higher = more to blame
  std::string summary;
  std::map<std::string, uint64_t> evidence;
};

struct OomReport {
  uint64_t t_ns = 0;
  std::string op;
  int result = 0;
  int device = -1;
  uint64_t requested_bytes = 0;
  uint64_t device_free_bytes = 0, device_total_bytes = 0;
  uint64_t process_device_bytes = 0;            // live device memory of this process
  std::map<std::string, uint64_t> process_by_kind;
  uint64_t not_attributable_bytes = 0;           // total - free - process (others + driver + caches)
  uint64_t pool_cached_bytes = 0;                // inferred free memory held by this process's pools
  uint64_t pool_largest_free_gap_bytes = 0;      // the largest free piece of any of them at the failure
  uint64_t vmm_unmapped_bytes = 0;               // physical handles not mapped anywhere
  uint64_t graph_pool_reserved_bytes = 0;        // the driver's graph pool (in process_device_bytes)
  uint64_t graph_pool_used_bytes = 0;            // of it, bound to graph allocations
  // The pools' own figures read at the failure (RESERVED/USED_MEM_CURRENT of the device's
  // pools): when present, pool_cached_bytes is reserved - used from them, not the model.
  bool pool_driver = false;
  uint64_t pool_reserved_bytes = 0, pool_used_bytes = 0;
  // A stream-ordered request from a pool created with a maxSize: the limit and what the pool
  // held then (its inferred footprint); 0 when the pool has no limit.
  uint64_t pool_limit_bytes = 0, pool_limit_held_bytes = 0;
  // This process's contexts and code on the device at the failure (format/accounting.h, rule
  // 14): all of them, and of them the costs measured without a `before` (a first context's:
  // they may include other processes' memory).
  uint64_t code_bytes = 0, code_after_only_bytes = 0;
  // Of code_bytes, the contexts' costs (with their limits), and how many contexts they are.
  uint64_t context_bytes = 0, contexts = 0;
  bool nvml_self = false;        // NVML listed this process on the device, with a figure
  uint64_t nvml_self_bytes = 0;  // what NVML says this process uses there (everything it holds)
  // The not-attributable memory split once, for every renderer and the verdict
  // (split_unattributed, oom_verdict.h; docs/metrics.md "Where the rest of the device is"):
  // this process's caches, its contexts and code, and what is elsewhere (other processes, the
  // driver), of which up to elsewhere_unsure_bytes may be this process's first context.
  uint64_t own_cached_bytes = 0, own_code_bytes = 0, elsewhere_bytes = 0, elsewhere_unsure_bytes = 0;
  std::string own_code_basis;  // "nvml", "measured" or "" (nothing of it known)
  uint64_t first_context_bytes = 0;  // the after-only costs as the split counts them (NVML bounds them)
  uint64_t code_not_own_bytes = 0;   // of code_bytes, what the split does not count as this process's
  Fidelity fidelity;  // the device's used memory explained at the failure
  std::vector<SiteGroup> top_holders;
  std::vector<GrowthSite> grew_before;
  bool nvml = false;                       // the process list below comes from NVML
  std::vector<GpuProcess> other_processes;  // on this device, this process excluded
  std::vector<GpuProcess> nvml_rows;        // NVML's whole list, this process included, in its order
  uint32_t stack_id = 0;
  std::vector<Frame> stack;  // of the failed request
  uint32_t tid = 0;                // the thread that made it
  std::string autograd_thread;     // its name when it is one of PyTorch's autograd workers (in backward)
  std::string verdict;
  std::vector<Cause> causes;  // ranked
  std::vector<std::string> remedies;
  // The allocator settings the remedies name, replayed (`vramtrace whatif`: whatif/remedy_whatif.h).
  struct WhatifCitation {
    std::string alloc_conf;
    uint64_t peak_reserved_bytes = 0, run_peak_reserved_bytes = 0;  // under it; the run's settings, modelled
    bool would_happen = true;
  };
  std::vector<WhatifCitation> whatif;
  ActivityAt activity;
  bool torch = false;     // PyTorch's OutOfMemoryError for this failure: figures and verdict in its terms
  TorchOomInfo torch_info;
};

struct PoolFragmentation {
  std::string pool;  // handle in hex, or "default:<device>"
  int device = -1;
  uint64_t footprint_bytes = 0, live_bytes = 0, largest_free_gap_bytes = 0;
  double fragmentation = 0;  // 1 - largest_free_gap / (footprint - live), 0 when nothing is free
  // At its worst moment, when that was worse than at the end (worst_t_ns 0: the end was the worst).
  uint64_t worst_t_ns = 0, worst_footprint_bytes = 0, worst_live_bytes = 0, worst_largest_free_gap_bytes = 0;
  double worst_fragmentation = 0;
};

struct CacheFlush {  // a failed allocation, frees (a caching allocator emptying its cache), a retry
  uint64_t t_ns = 0;
  uint64_t requested_bytes = 0;
  uint64_t freed_bytes = 0;
  uint64_t freed_count = 0;
  bool retry_succeeded = false;
};

struct Fragmentation {
  uint64_t vmm_reserved_bytes_at_peak = 0, vmm_mapped_bytes_at_peak = 0;
  uint64_t vmm_reserved_bytes_max = 0, vmm_mapped_bytes_max = 0;
  std::vector<PoolFragmentation> pools;  // at the end of the trace
  std::vector<CacheFlush> cache_flushes;
};

struct RegionReport {  // a named region marked with vramtrace_region_begin/end (e.g. one test)
  std::string name;
  uint64_t t_begin = 0, t_end = 0;
  bool closed = false;
  uint64_t start_bytes = 0, end_bytes = 0, peak_bytes = 0;  // device bytes, all devices
  uint64_t t_peak = 0;  // when peak_bytes was first reached (t_begin when nothing rose above the start)
  // PyTorch's allocated bytes (its live tensors, all devices), when its block layer was followed
  // inside the region: at the start (0 before PyTorch's first block), the most, when, at the end.
  bool tensors = false;
  uint64_t tensor_start_bytes = 0, tensor_peak_bytes = 0, tensor_end_bytes = 0, t_tensor_peak = 0;
};

struct PhaseRow {  // memory by top-level NVTX range ("forward", "backward", "optimizer", ...)
  std::string name;
  size_t count = 0;
  uint64_t max_peak_bytes = 0, max_growth_bytes = 0;
};

struct KernelRecording {  // what the CUPTI recorder did
  bool recorded = false;        // kernel activity is in the trace
  std::string status;           // one line: started / unavailable (why) / stepped aside at ...
  uint64_t kernels = 0;
  // Cross-check: CUPTI's allocation records vs intercepted events.
  size_t cupti_allocations = 0, matched = 0;
  double coverage = 1.0;
  std::vector<std::string> missed;  // "0xADDR SIZE bytes" for allocations interception missed
  // CUPTI's own memory, as the recorder configured it (0: unknown / CUPTI's default).
  uint64_t device_buffers = 0, device_buffer_bytes = 0;  // per context, at most
  uint64_t lost_records = 0, refused_buffers = 0;
  std::string activity_buffers;  // "per process", "per thread", "" (a trace from before this)
};

// The lookup safety net (aggregators/lookups.h): entry points that escaped the hooks.
struct LookupGap {
  std::string symbol;    // as asked for (cuGetProcAddress: the base name)
  std::string category;  // allocation, free, mapping, pool, graph, sharing, context
  uint32_t version = 0;  // the CUDA version asked for (0: dlsym)
  uint64_t flags = 0;
};
struct IsolatedOpen {      // a library opened where no hook can reach it
  std::string path;        // as given to dlopen / dlmopen ("(more libraries)": past the recorder's 16)
  bool other_namespace = false;  // dlmopen into a namespace other than the base one
  uint64_t mode = 0;       // the dlopen mode (RTLD_DEEPBIND = 0x8)
  bool caught = false;     // the LD_AUDIT module handed it the hooks: its calls are recorded
};
struct InterceptionReport {
  bool lookups_reached = false;  // a cuGetProcAddress or dlsym(handle) lookup reached vramtrace
  std::string first_lookup;
  std::vector<LookupGap> unhooked;  // in the order first handed out
  bool cudart_loaded = false;       // libcudart.so* among the modules
  bool cudart_unreached = false;    // loaded, format 1.1+, and no lookup reached vramtrace
  std::vector<IsolatedOpen> isolated;  // RTLD_DEEPBIND / other-namespace opens, each path once
  bool notable() const { return !unhooked.empty() || cudart_unreached || !isolated.empty(); }
};

struct LargeAllocation {  // one of the largest allocations of the run
  uint64_t bytes = 0, t_ns = 0;
  int device = -1;
  std::string kind;  // bucket name
  std::string op;
  uint32_t stack_id = 0;
  std::vector<Frame> stack;
  bool freed = false;
  uint64_t freed_t_ns = 0;
};

struct SizeBucket {  // allocations whose size is in [min_bytes, max_bytes)
  uint64_t min_bytes = 0, max_bytes = 0;  // max 0: no upper bound
  uint64_t count = 0, bytes = 0;
};

struct AllocationStats {  // every successful allocation of the run (address-keyed and VMM physical)
  uint64_t count = 0, bytes = 0;  // bytes saturate at 2^64 - 1
  uint64_t freed = 0;             // of them, freed during the run
  std::vector<LargeAllocation> largest;  // biggest first
  std::vector<SizeBucket> histogram;     // powers of 4 from 1 KiB, the non-empty range
};

// CUDA graphs on one device (format/accounting.h, rules 8 and 9): the driver's graph pool and the
// graph memory nodes made (virtual addresses, no memory of their own).
struct GraphDevice {
  int device = -1;
  uint64_t pool_reserved_bytes = 0, pool_used_bytes = 0;  // at the end of the trace
  uint64_t pool_reserved_max_bytes = 0;                   // the highest sample
  uint64_t pool_reserved_at_peak_bytes = 0;               // in the device's peak
  uint64_t nodes = 0, node_bytes = 0;                     // graph memory nodes made
  uint64_t captured = 0, captured_bytes = 0;              // of them, stream-ordered allocations captured
};

// Memory shared between processes (format/accounting.h, rules 10 to 13): what this process
// imported (another's memory: never a leak, a peak or an allocation of its own), which of its
// allocations it exported, and its multicast objects (no memory of their own).
struct SharingReport {
  uint64_t imported_bytes = 0, imported_count = 0;  // live at the end (not in leak_bytes)
  uint64_t imported_max_bytes = 0;                  // the most imported at once, all devices
  std::vector<SiteGroup> imported;                  // live at the end, by importing site
  uint64_t exports = 0;                             // export calls that succeeded
  uint64_t shared_bytes = 0, shared_count = 0;      // the distinct live allocations they shared
  std::vector<SiteGroup> shared;                    // by the allocation's site
  uint64_t multicast_objects = 0, multicast_bytes = 0;  // created during the run
  uint64_t multicast_live = 0, multicast_live_bytes = 0, multicast_bound_bytes = 0;  // at the end
  std::vector<SiteGroup> multicast;                 // created, by creating site (kind "multicast")
  bool present() const { return imported_count || imported_max_bytes || exports || multicast_objects; }
};

// PyTorch's caching allocator at the end of the trace: what it reserved is its cache, not a leak
// (empty_cache() would have released the free part, the process's exit gives all back); the
// tensors it still handed out are counted in the leaks instead (docs/metrics.md, "Leaks").
struct TorchCacheAtExit {
  bool known = false;
  uint64_t reserved_bytes = 0, segments = 0, allocated_bytes = 0;
  uint64_t workspace_bytes = 0;  // of allocated: PyTorch's cuBLAS workspaces (kept for the process's life)
  uint64_t cached_bytes() const { return reserved_bytes > allocated_bytes ? reserved_bytes - allocated_bytes : 0; }
};

// PyTorch's pinned host memory at the end: its CachingHostAllocator (pin_memory=True, a
// DataLoader's pinning thread, non_blocking copies) takes page-locked host memory with
// cudaHostAlloc and keeps every block for reuse until the process exits, so all it took is still
// allocated then: its cache, not a leak (docs/metrics.md, "Leaks"). Recognised by the library that
// made the call (libtorch_cuda.so, libc10_cuda.so); the trace has no host block records, so a
// pinned tensor still referenced at the end is counted here too.
struct TorchHostCacheAtExit {
  uint64_t bytes = 0, count = 0;
};

struct LiveAt {  // what was live at a chosen time (AnalysisOptions::at_ns) or mark (at_mark)
  bool asked = false;
  uint64_t t_ns = 0;      // the instant, on the trace's clock
  bool past_end = false;  // after the last event: what was live at the end
  std::string mark;       // asked by mark: its name
  bool mark_found = false;  // (false: no region of that name began; the state at the end is given)
  struct Device {
    int device = 0;
    uint64_t device_bytes = 0, pinned_host_bytes = 0, managed_bytes = 0;
  };
  std::vector<Device> devices;
  uint64_t device_bytes = 0;         // all devices
  std::vector<SiteGroup> live_set;   // every bucket and device, biggest first
};

struct Snapshot {  // the live set at one instant of the grid (SnapshotAggregator), its biggest sites
  uint64_t t_ns = 0;
  uint64_t until_ns = 0;  // the next event: the state held from t_ns until then
  struct Device {
    int device = 0;
    uint64_t bytes = 0;  // device memory
  };
  std::vector<Device> devices;
  uint64_t total_bytes = 0;  // every site, device and bucket
  struct Site {
    uint32_t stack_id = 0;
    int device = -1;
    std::string kind;  // bucket name
    uint64_t bytes = 0, count = 0;
  };
  std::vector<Site> sites;  // the biggest, bytes first
};
struct Snapshots {
  uint64_t interval_ns = 0;  // the grid's spacing at the end
  std::vector<Snapshot> at;
  std::map<uint32_t, std::vector<Frame>> stacks;  // every stack the snapshots name, symbolized
};

struct TraceReport {
  std::string path;
  ProcessInfo process;
  std::vector<std::string> problems;  // every note of the reader, one sentence each
  std::vector<std::string> damage;    // those that mean lost records; the error when unreadable
  bool partial = false;     // records were lost to damage: figures are lower bounds
  bool unreadable = false;  // in a job: named like a trace or starting like one, but not readable
  bool damaged() const { return unreadable || partial; }
  uint64_t events = 0, failed_events = 0, unmatched_frees = 0;
  uint64_t first_t_ns = 0, last_t_ns = 0;
  // Peak (device memory), per device, and the device with the highest one first.
  std::vector<DevicePeak> peaks;
  uint64_t pinned_host_peak_bytes = 0, managed_peak_bytes = 0;
  std::vector<TimelineSeries> timeline;
  // Leaks: live at the end of the trace.
  std::string end;  // clean_exit, killed (no clean close), running (no close yet: its writer runs)
  uint64_t leak_bytes = 0, leak_count = 0;
  std::vector<SiteGroup> leaks;  // with PyTorch: its tensors (kind "tensor"), not its segments
  TorchCacheAtExit torch_cache_at_exit;
  TorchHostCacheAtExit torch_host_cache_at_exit;  // PyTorch's pinned host memory (not in leak_bytes)
  uint64_t teardown_bytes = 0, teardown_count = 0;  // freed only by context teardown
  std::vector<SiteGroup> teardown;
  std::vector<GrowthSite> growth;
  uint64_t torch_segment_growth = 0;  // growing sites left out: PyTorch's segments (its reserved memory)
  Fragmentation fragmentation;
  std::vector<OomReport> ooms;  // the first kDetailedOoms and the latest (aggregators/first_and_latest.h)
  uint64_t ooms_omitted = 0;    // the OOMs between them, counted, not detailed
  uint64_t oom_count() const { return ooms.size() + ooms_omitted; }
  std::vector<RegionReport> regions;
  KernelRecording kernels;
  std::vector<PhaseRow> phases;
  TorchReport torch;  // PyTorch's allocator in its own terms (present only when PyTorch was seen)
  InterceptionReport interception;
  AllocationStats allocations;
  LiveAt live_at;
  Snapshots snapshots;
  std::vector<GraphDevice> graphs;  // devices with graph activity only
  SharingReport sharing;
};

struct RankRow {
  int rank = -1;
  uint64_t pid = 0;
  std::string host, path;
  uint64_t peak_bytes = 0, leak_bytes = 0;
  size_t ooms = 0;
  std::string verdict;  // of the first OOM, if any
  bool damaged = false;  // records were lost: its figures are lower bounds
  std::string command;   // argv, space-separated
  std::string end;       // TraceReport::end: clean_exit, killed, running
};

struct JobReport {
  std::vector<TraceReport> traces;      // the readable ones (damaged or not), in rank order
  std::vector<TraceReport> unreadable;  // named or starting like a trace but not readable: path + damage
  std::vector<RankRow> ranks;
  uint64_t max_peak = 0, min_peak = 0, mean_peak = 0;
  double imbalance = 0;  // max / mean peak
  // A job of per-rank summaries (job_summaries.cpp): `traces` then hold only what the table and
  // the damage need, and these the ranks' own JSON reports, in the order of `traces`.
  std::vector<std::string> summaries;
  // Each trace's part of the job's JSON, in the order of `traces`, when the analysis wrote them
  // (AnalysisOptions::render); else empty.
  std::vector<std::string> rendered;
};

struct AnalysisOptions {
  size_t top = 10;             // groups per list
  size_t timeline_points = 512;
  int64_t at_ns = -1;          // live set at this time since the trace's start (-1: not asked)
  std::string at_mark;         // or at the first begin of the vramtrace region of this name ("": not asked)
  SymbolizerOptions symbols;
  bool progress = false;       // progress on stderr (a terminal)
  bool accept_summaries = false;  // a job directory of per-rank JSON reports (`vramtrace report` only)
  unsigned jobs = 1;           // a job directory: traces analysed at once (job_parallel.h); 1 = one after another
  // A job directory: each trace's part of the output, written on the job's workers as soon as
  // none has a trace left to analyse (JobReport::rendered). Empty: not written.
  std::function<std::string(const TraceReport&)> render;
};

}  // namespace vt::analyzer
