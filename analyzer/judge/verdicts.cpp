// See verdicts.h. Each row holds everything one verdict says; the figures come from the judges'
// facts (oom_facts.h), the formulas are docs/metrics.md's.
#include "verdicts.h"

#include <algorithm>

#include "byte_size.h"
#include "oom_verdict.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

using Remedies = std::vector<std::string>;

// The user's Python line when there is one ("train.py:18 in train_step"), not the FFI call; else
// the innermost resolved native function outside vramtrace.
std::string where(const std::vector<Frame>& stack) {
  for (const Frame& f : stack)
    if (f.python) return user_line(stack);
  for (const Frame& f : stack)
    if (f.function != "??" && f.function.find("vt::") == std::string::npos) {
      std::string s = f.function;
      if (!f.file.empty()) s += " (" + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line) + ")";
      return s;
    }
  return stack.empty() ? "an unknown call site" : stack[0].module + "+" + std::to_string(stack[0].offset);
}

std::string line_of(const std::vector<Frame>& stack) {
  std::string s = user_line(stack);
  return s.empty() ? "an unknown line" : s;
}

// "libnccl.so.2 700 MiB, libcublas.so.12 8.00 MiB" for the memory outside PyTorch, by library.
std::string outside_by_library(const std::vector<SiteGroup>& outside) {
  std::vector<std::pair<std::string, uint64_t>> libs;
  for (const SiteGroup& g : outside) {
    std::string lib = stack_library(g.stack);
    if (lib.empty()) lib = user_line(g.stack);
    if (lib.empty()) lib = "an unknown library";
    auto it = std::find_if(libs.begin(), libs.end(), [&](const auto& p) { return p.first == lib; });
    if (it == libs.end())
      libs.push_back({lib, g.bytes});
    else
      it->second += g.bytes;
  }
  std::sort(libs.begin(), libs.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s;
  for (size_t i = 0; i < libs.size() && i < 4; ++i) s += (i ? ", " : "") + libs[i].first + " " + format_bytes(libs[i].second);
  return s;
}

// The max_split_size_mb that keeps the fragmented segments whole, 0 when none can: blocks of at
// least that many MiB are not split for smaller requests (PyTorch's "oversize" blocks), every
// smaller block still is, and PyTorch refuses 20 or less (c10/cuda/CUDAAllocatorConfig.cpp: "must
// be > 20", kLargeBuffer). So it must be at most the smallest segment that holds split free space
// (free space beside live tensors) and at most the request, which must stay able to take one.
uint64_t max_split_size_mb(const std::vector<TorchSegment>& segments, uint64_t request) {
  constexpr uint64_t kMinMb = 21;
  uint64_t mb = request >> 20;
  bool split = false;
  for (const TorchSegment& g : segments)
    if (!g.expandable && g.allocated && g.free() && g.size >> 20 >= kMinMb) {
      mb = std::min(mb, g.size >> 20);
      split = true;
    }
  return split && mb >= kMinMb ? mb : 0;
}

// ---- request_exceeds_device ------------------------------------------------------------------

std::optional<Cause> exceeds_driver(const DriverFacts& f) {
  if (!f.o.device_total_bytes || f.R <= f.o.device_total_bytes) return std::nullopt;
  return Cause{"request_exceeds_device", 1.0 + double(f.R) / f.T,
               "the request (" + format_bytes(f.R) + ") is larger than the whole device (" +
                   format_bytes(f.o.device_total_bytes) + ")",
               {{"requested_bytes", f.R}, {"device_total_bytes", f.o.device_total_bytes}}};
}
Remedies exceeds_driver_remedies(const DriverFacts& f) {
  return {"The request alone (" + format_bytes(f.R) + ") exceeds the device: no allocator setting can make "
          "it fit. Split the work: smaller tensors or chunks, sharding across devices, or CPU offload.",
          "Check the size computation at " + where(f.o.stack) + ": an unexpectedly huge request is often a "
          "shape bug."};
}
std::optional<Cause> exceeds_torch(const TorchFacts& f) {
  if (!f.T || f.S <= f.T) return std::nullopt;
  return Cause{"request_exceeds_device", 1.0 + double(f.S) / f.Td,
               "the tensor (" + format_bytes(f.S) + ") is larger than the whole device (" + format_bytes(f.T) + ")",
               {{"block_bytes", f.S}, {"device_total_bytes", f.T}}};
}
Remedies exceeds_torch_remedies(const TorchFacts& f) {
  const std::string req = line_of(f.o.stack);
  return {"One tensor of " + format_bytes(f.S) + " cannot fit on a " + format_bytes(f.T) +
              " device whatever the allocator does: split the work (smaller batch or chunks, sharding across "
              "devices, CPU offload).",
          "Check the shape computed at " + req + ": an unexpectedly huge tensor is often a shape bug."};
}

// ---- other_processes (one rule and wording for both judges) ---------------------------------

std::optional<Cause> others_driver(const DriverFacts& f) {
  // (A first context's cost stays in `others` without NVML: said, not taken off, so that a real
  // "another process holds it" is not turned into "the context costs it".)
  if (double(f.others) < 0.05 * f.T) return std::nullopt;
  return other_processes_cause(f.others, f.F, f.R, f.T, f.named, "requested_bytes",
                               f.blind ? kNvmlBlindOthers : "other processes, the driver",
                               f.o.nvml ? 0 : f.o.elsewhere_unsure_bytes);
}
Remedies others_driver_remedies(const DriverFacts& f) {
  return {other_processes_remedy(f.others, f.named, f.blind),
          "When sharing a GPU on purpose, cap each process: torch.cuda.set_per_process_memory_fraction, "
          "XLA_PYTHON_CLIENT_MEM_FRACTION for JAX."};
}
std::optional<Cause> others_torch(const TorchFacts& f) {
  if (double(f.others) < 0.05 * f.Td) return std::nullopt;
  return other_processes_cause(f.others, f.F, f.X, f.Td, f.named, "tried_to_allocate_bytes",
                               f.blind          ? kNvmlBlindOthers
                               : f.o.code_bytes ? "other processes, the driver"  // (its context: taken off)
                                                : "other processes, this process's CUDA context, the driver",
                               f.unsure);
}
Remedies others_torch_remedies(const TorchFacts& f) {
  return {other_processes_remedy(f.others, f.named, f.blind),
          "When sharing a GPU on purpose, cap each process: torch.cuda.set_per_process_memory_fraction."};
}

// ---- pool_limit -----------------------------------------------------------------------------

// The pool's own limit: the device may have room, the pool may not grow (cuMemPoolCreate's
// maxSize). Ahead of fragmentation, whose "free but not usable" it otherwise looks like.
std::optional<Cause> pool_limit_driver(const DriverFacts& f) {
  const OomReport& o = f.o;
  if (!o.pool_limit_bytes || o.pool_limit_held_bytes + f.R <= o.pool_limit_bytes) return std::nullopt;
  return Cause{"pool_limit", 1.5,
               "the pool this allocation draws from is limited to " + format_bytes(o.pool_limit_bytes) +
                   " (its maxSize) and already holds " + format_bytes(o.pool_limit_held_bytes) +
                   ": the request (" + format_bytes(f.R) + ") does not fit under its limit" +
                   (f.F >= f.R ? ", though the device has " + format_bytes(f.F) + " free" : ""),
               {{"pool_max_bytes", o.pool_limit_bytes},
                {"pool_held_bytes", o.pool_limit_held_bytes},
                {"requested_bytes", f.R},
                {"device_free_bytes", f.F}}};
}
Remedies pool_limit_driver_remedies(const DriverFacts& f) {
  return {"The pool was created with a maxSize of " + format_bytes(f.o.pool_limit_bytes) +
              " (cudaMemPoolProps.maxSize / CUmemPoolProps.maxSize): raise it, or create the pool without "
              "one (0: no limit but the device).",
          "Or make room inside it: free what it holds (live allocations of this pool), and return what it "
          "caches with cudaMemPoolTrimTo; or allocate the large request from another pool "
          "(cudaMallocFromPoolAsync) or with cudaMalloc."};
}

// ---- fragmentation --------------------------------------------------------------------------

std::optional<Cause> fragmentation_driver(const DriverFacts& f) {
  const uint64_t R = f.R, F = f.F, cached = f.cached;
  if (F < R && double(cached) < 0.05 * f.T) return std::nullopt;
  bool would_fit = R <= F + cached;
  double score = F >= R ? 0.9 : double(cached) / f.T + (would_fit ? 0.5 : 0);
  return Cause{"fragmentation", score,
               F >= R ? "the device reported " + format_bytes(F) + " free, enough for the request, yet "
                            "the allocation failed: the free memory is not usable in one piece"
                      : format_bytes(cached) + " is reserved by this process but not in use (pool free "
                            "space, unmapped physical memory)" +
                            (would_fit ? "; released, it would make room for the request" : ""),
               {{"cached_bytes", cached},
                {"pool_cached_bytes", f.o.pool_cached_bytes},
                {"vmm_unmapped_bytes", f.o.vmm_unmapped_bytes},
                {"device_free_bytes", F},
                {"requested_bytes", R}}};
}
Remedies fragmentation_driver_remedies(const DriverFacts&) {
  return {"The memory exists but is cached, not live: release it before the large request. With PyTorch, "
          "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch 2.1 or later) lets segments grow in "
          "place instead of splitting; torch.cuda.empty_cache() returns cached blocks.",
          "For stream-ordered pools (cudaMallocAsync), lower the release threshold "
          "(cudaMemPoolAttrReleaseThreshold) or call cudaMemPoolTrimTo: emptying caches helps here "
          "because the memory is cached, not in use."};
}
std::optional<Cause> fragmentation_torch(const TorchFacts& f) {
  const uint64_t U = f.U, S = f.S, L = f.L, I = f.I;
  std::map<std::string, uint64_t> evidence = {{"reserved_unallocated_bytes", U}, {"largest_free_block_bytes", L},
                                              {"block_bytes", S}, {"inactive_split_bytes", I},
                                              {"reserved_bytes", f.R}};
  if (U >= S && L < S)
    return Cause{"fragmentation", 1.0 + double(U) / f.Td,
                 "PyTorch holds " + format_bytes(U) + " reserved but unallocated, more than the " + format_bytes(S) +
                     " requested, but its largest free block is " + format_bytes(L) + ": the cache is fragmented (" +
                     format_bytes(I) + " is inactive split, free space inside segments that still hold live tensors)",
                 evidence};
  if (double(U) < 0.05 * f.Td) return std::nullopt;
  bool would_fit = f.X <= f.F + U;
  return Cause{"fragmentation", double(U) / f.Td + (would_fit ? 0.5 : 0),
               format_bytes(U) + " is reserved by PyTorch but unallocated (inactive split " + format_bytes(I) +
                   ") and its largest free block is " + format_bytes(L) +
                   (would_fit ? "; in one piece it would make room for the request" : ""),
               evidence};
}
Remedies fragmentation_torch_remedies(const TorchFacts& f) {
  const TorchOomInfo& t = f.t;
  Remedies r;
  const bool expandable = std::any_of(t.view.segments.begin(), t.view.segments.end(),
                                      [](const TorchSegment& g) { return g.expandable; });
  const uint64_t split_mb = max_split_size_mb(t.view.segments, f.S);
  if (!expandable)
    r.push_back("Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch 2.1 or later): segments then "
                "grow in place and free space does not stay split between live tensors (" + format_bytes(f.I) +
                " inactive split at the failure).");
  if (split_mb)
    r.push_back(std::string(expandable ? "Keep" : "Or keep") + " large blocks whole: `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:" +
                std::to_string(split_mb) + "` (blocks of " + std::to_string(split_mb) +
                " MiB and more, as the segments holding the split free space are, are then not split for "
                "smaller tensors).");
  else
    r.push_back("max_split_size_mb cannot help here: PyTorch requires more than 20 and still splits every block "
                "smaller than it, and the split free space sits in segments of 20 MiB or less (or the request is "
                "that small).");
  r.push_back("torch.cuda.empty_cache() does not help here: the free space sits in segments that still hold "
              "live tensors" + (f.top_holder.empty() ? "" : " (the most at " + f.top_holder + ")") +
              ". Allocating the largest tensors first, or freeing long-lived tensors in the order they were "
              "made, keeps the segments whole.");
  return r;
}

// ---- outside_pytorch ------------------------------------------------------------------------

std::optional<Cause> outside_torch(const TorchFacts& f) {
  const uint64_t O = f.O;
  if (!O || (double(O) < 0.05 * f.Td && f.X > f.F + O)) return std::nullopt;
  bool would_fit = f.X <= f.F + O;
  std::string libs = outside_by_library(f.t.outside);
  return Cause{"outside_pytorch", double(O) / f.Td + (would_fit ? 0.5 : 0),
               format_bytes(O) + " of this process's device memory is outside PyTorch's allocator" +
                   (libs.empty() ? "" : ": " + libs) + (would_fit ? "; without it the request would fit" : ""),
               {{"outside_bytes", O}, {"device_free_bytes", f.F}, {"tried_to_allocate_bytes", f.X}}};
}
Remedies outside_torch_remedies(const TorchFacts& f) {
  std::string libs = outside_by_library(f.t.outside);
  return {format_bytes(f.O) + " of device memory belongs to other libraries of this process" +
              (libs.empty() ? "" : " (" + libs + ")") +
              ", which PyTorch cannot release: NCCL buffers (NCCL_BUFFSIZE, fewer communicators or "
              "channels), cuBLAS/cuDNN workspaces (CUBLAS_WORKSPACE_CONFIG), another framework's pool in the same "
              "process (JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false, CuPy: its memory pool's free_all_blocks()).",
          "torch.cuda.empty_cache() cannot free this memory: it is not in PyTorch's cache."};
}

// ---- leak_growth ----------------------------------------------------------------------------

std::optional<Cause> growth_driver(const DriverFacts& f) {
  const uint64_t growth = f.growth, P = f.P;
  if (!growth || (double(growth) < 0.05 * f.T && growth * 5 < P)) return std::nullopt;
  bool would_fit = f.R <= f.F + growth;
  std::string site = f.o.grew_before.empty() ? "" : where(f.o.grew_before[0].site.stack);
  return Cause{"leak_growth", double(growth) / double(std::max<uint64_t>(P, 1)) + (would_fit ? 0.5 : 0),
               format_bytes(growth) + " of the live set grew steadily before the failure" +
                   (site.empty() ? "" : ", most at " + site),
               {{"growth_bytes", growth}, {"growing_sites", f.o.grew_before.size()}, {"process_device_bytes", P}}};
}
Remedies growth_driver_remedies(const DriverFacts& f) {
  const std::vector<GrowthSite>& g = f.o.grew_before;
  std::string site = g.empty() ? "a call site" : where(g[0].site.stack);
  return {site + " grew by " + format_bytes(g.empty() ? 0 : g[0].growth_bytes) +
              " before the failure: look for tensors or buffers kept across iterations (a loss kept with "
              "its graph: use loss.item() or loss.detach(); lists that collect outputs; caches keyed by "
              "step).",
          "Emptying allocator caches cannot free live memory: the references must go."};
}
std::optional<Cause> growth_torch(const TorchFacts& f) {
  const uint64_t growth = f.growth, A = f.A;
  if (!growth || (double(growth) < 0.05 * f.Td && growth * 5 < A)) return std::nullopt;
  bool would_fit = f.X <= f.F + growth || f.S <= f.U + growth;
  const TorchGrowth* top = f.top_growth;
  return Cause{"leak_growth", double(growth) / double(std::max<uint64_t>(A, 1)) + (would_fit ? 0.5 : 0),
               format_bytes(growth) + " of live tensors grew steadily before the failure while the loop freed "
               "its temporaries" +
                   (top ? ", most at " + line_of(top->stack) + " (+" + format_bytes(top->kept_bytes) + ", " +
                              std::to_string(top->count) + " tensors live)"
                        : "") +
                   ": tensors kept alive across iterations",
               {{"growth_bytes", growth}, {"growing_lines", f.t.grew_before.size()}, {"allocated_bytes", A}}};
}
Remedies growth_torch_remedies(const TorchFacts& f) {
  const TorchGrowth* top = f.top_growth;
  std::string where = top ? line_of(top->stack) : "a line";
  return {where + " kept " + format_bytes(top ? top->kept_bytes : f.growth) +
              " of tensors alive across iterations: a tensor that outlives its step (a loss summed without "
              ".item(), an output kept with its graph: .detach() it, a list that collects outputs): `del` it or "
              "keep a Python number.",
          "torch.cuda.empty_cache() cannot free live tensors: the references must go."};
}

// ---- graph_pool -----------------------------------------------------------------------------

std::optional<Cause> graph_pool_driver(const DriverFacts& f) {
  const uint64_t G = f.G;  // in P (format/accounting.h, rule 9)
  if (!G || double(G) < 0.05 * f.T) return std::nullopt;
  bool would_fit = f.R <= f.F + G;
  return Cause{"graph_pool", double(G) / f.T + (would_fit ? 0.5 : 0),
               format_bytes(G) + " is held by the driver's CUDA graph memory pool (" +
                   format_bytes(f.o.graph_pool_used_bytes) + " of it bound to graph allocations)" +
                   (would_fit ? "; released, it would make room for the request" : ""),
               {{"graph_pool_reserved_bytes", G},
                {"graph_pool_used_bytes", f.o.graph_pool_used_bytes},
                {"device_free_bytes", f.F},
                {"requested_bytes", f.R}}};
}
Remedies graph_pool_driver_remedies(const DriverFacts& f) {
  const OomReport& o = f.o;
  const uint64_t unused =
      o.graph_pool_reserved_bytes > o.graph_pool_used_bytes ? o.graph_pool_reserved_bytes - o.graph_pool_used_bytes : 0;
  return {"CUDA graphs keep their memory reserved for as long as they exist: every graph captured with "
          "torch.cuda.graph / torch.cuda.CUDAGraph (and torch.compile's mode=\"reduce-overhead\") holds "
          "its memory pool; with `PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync` the tensors made "
          "during capture are graph memory nodes in the driver's graph pool, which "
          "torch.cuda.empty_cache() does not return.",
          "Release the graphs you no longer replay (del the CUDAGraph object, or reset() it), share one "
          "pool between graphs (torch.cuda.graph(pool=...) with torch.cuda.graph_pool_handle()), and "
          "return what no graph uses with cudaDeviceGraphMemTrim (" + format_bytes(unused) +
              " of the pool is not bound to any graph allocation now)."};
}

// ---- live_set_too_large (always considered: the cause when nothing else is) ---------------------

std::optional<Cause> live_set_driver(const DriverFacts& f) {
  const uint64_t P = f.P;
  uint64_t stable = P - f.growth - std::min(f.G, P - f.growth);
  bool alone_too_big = double(stable) + double(f.R) > double(f.o.device_total_bytes) - double(f.others);
  return Cause{"live_set_too_large", double(stable) / f.T + (alone_too_big ? 0.3 : 0),
               "this process holds " + format_bytes(P) + " of live device memory" +
                   (alone_too_big ? "; with the request it does not fit on the device" : ""),
               {{"process_device_bytes", P}, {"requested_bytes", f.R}, {"device_total_bytes", f.o.device_total_bytes}}};
}
Remedies live_set_driver_remedies(const DriverFacts& f) {
  const OomReport& o = f.o;
  std::string top = o.top_holders.empty() ? "" : where(o.top_holders[0].stack) + " (" + format_bytes(o.top_holders[0].bytes) + ")";
  Remedies r = {"Reduce the live set: a smaller batch with gradient accumulation keeps the effective batch size.",
                "Mixed precision (bf16/fp16) halves activations and weights; activation checkpointing trades "
                "compute for activation memory.",
                top.empty() ? "Look first at the largest holders in the report."
                            : "Look first at the largest holder: " + top + "."};
  if (double(f.others) >= 0.05 * f.T) r.push_back(other_processes_remedy(f.others, f.named, f.blind));
  return r;
}
std::optional<Cause> live_set_torch(const TorchFacts& f) {
  uint64_t stable = f.A > f.growth ? f.A - f.growth : 0;
  bool too_big = double(stable) + double(f.S) > double(f.T) - double(f.others) - double(f.O);
  return Cause{"live_set_too_large", double(stable) / f.Td + (too_big ? 0.3 : 0),
               "live tensors hold " + format_bytes(f.A) + " (" + std::to_string(f.t.view.figures.blocks) + " blocks)" +
                   (f.top_holder.empty() ? "" : ", the most at " + f.top_holder) +
                   (too_big ? "; with the request they do not fit on the device" : ""),
               {{"allocated_bytes", f.A}, {"block_bytes", f.S}, {"device_total_bytes", f.T}}};
}
Remedies live_set_torch_remedies(const TorchFacts& f) {
  Remedies r = {"Reduce the live set" + (f.top_holder.empty() ? std::string() : " (the most at " + f.top_holder + ")") +
                    ": a smaller batch, with gradient accumulation to keep the effective batch size.",
                "Mixed precision (torch.autocast with bf16/fp16) halves activations; activation checkpointing "
                "(torch.utils.checkpoint) trades compute for activation memory.",
                "torch.cuda.empty_cache() cannot free live tensors; `del` what is no longer needed before the "
                "large step."};
  if (double(f.others) >= 0.05 * f.Td) r.push_back(other_processes_remedy(f.others, f.named, f.blind));
  return r;
}

}  // namespace

const std::vector<Verdict>& verdicts() {
  static const std::vector<Verdict> kTable = {
      {"request_exceeds_device", "the request is larger than the device",
       {exceeds_driver, exceeds_driver_remedies}, {exceeds_torch, exceeds_torch_remedies}},
      {"other_processes", "other processes hold the memory",
       {others_driver, others_driver_remedies}, {others_torch, others_torch_remedies}},
      {"pool_limit", "the pool reached its maxSize", {pool_limit_driver, pool_limit_driver_remedies}, {}},
      {"fragmentation", "free memory is cached or fragmented",
       {fragmentation_driver, fragmentation_driver_remedies}, {fragmentation_torch, fragmentation_torch_remedies}},
      {"outside_pytorch", "memory of this process outside PyTorch", {}, {outside_torch, outside_torch_remedies}},
      {"leak_growth", "memory kept growing (a leak)",
       {growth_driver, growth_driver_remedies}, {growth_torch, growth_torch_remedies}},
      {"graph_pool", "CUDA graphs hold the memory", {graph_pool_driver, graph_pool_driver_remedies}, {}},
      {"live_set_too_large", "the live set is too large",
       {live_set_driver, live_set_driver_remedies}, {live_set_torch, live_set_torch_remedies}},
  };
  return kTable;
}

const Verdict* find_verdict(const std::string& code) {
  for (const Verdict& v : verdicts())
    if (code == v.code) return &v;
  return nullptr;
}

void rank_causes(std::vector<Cause> causes, OomReport& o) {
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) { return a.score > b.score; });
  o.causes = std::move(causes);
  o.verdict = o.causes.empty() ? "unknown" : o.causes[0].code;
}

}  // namespace vt::analyzer
