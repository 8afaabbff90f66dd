// See oom_verdict.h.
#include "oom_verdict.h"

#include "user_frames.h"

#include <algorithm>
#include <cstdio>

#include "byte_size.h"

namespace vt::analyzer {


namespace {

// With NVML's list: `others` is what it saw (at most what is in use), and only the rest of the
// unexplained memory can be this process's cache.
void used_nvml_total(uint64_t listed, const OomReport& o, uint64_t& others, uint64_t& cached) {
  uint64_t used = o.device_total_bytes > o.device_free_bytes ? o.device_total_bytes - o.device_free_bytes : 0;
  others = std::min(listed, used);
  uint64_t rest = o.not_attributable_bytes > others ? o.not_attributable_bytes - others : 0;
  cached = std::min(cached, rest);
}

std::string where(const std::vector<Frame>& stack) {
  // The user's Python line when there is one ("train.py:18 in train_step"), not the FFI call.
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

}  // namespace

bool nvml_blind(const OomReport& o) {
  return o.nvml && !o.nvml_self && o.nvml_rows.size() == o.other_processes.size();
}

void split_unattributed(OomReport& o) {
  const uint64_t N = o.not_attributable_bytes, P = o.process_device_bytes;
  const uint64_t cached = std::min(o.pool_cached_bytes + o.vmm_unmapped_bytes, N);
  const uint64_t rest = N - cached;
  const uint64_t after_only = std::min(o.code_after_only_bytes, o.code_bytes);
  const uint64_t measured = o.code_bytes - after_only;
  o.own_cached_bytes = cached;
  o.code_not_own_bytes = 0;
  if (nvml_blind(o)) {
    // NVML cannot see this process: its (empty or foreign) list may have "corrected" the first
    // context's cost by nothing (rule 14), and a first context's cost takes in what other
    // processes held then. What the driver shows used beyond this process's memory and caches
    // is its contexts only up to what contexts can cost; the rest is another process's.
    const uint64_t contexts = std::min(o.context_bytes, o.code_bytes);
    const uint64_t counted = std::min(contexts, o.contexts * kContextBytesBound);
    o.code_not_own_bytes = contexts - counted;
    o.own_code_bytes = std::min(o.code_bytes - o.code_not_own_bytes, rest);
    o.own_code_basis = o.code_bytes ? "bounded" : "";
    o.elsewhere_unsure_bytes = 0;
    o.first_context_bytes = after_only;
  } else if (o.nvml_self) {
    // NVML counts everything this process holds on the device (contexts, code, allocations as
    // the driver rounds them, caches): beyond its live memory and caches, it is its own. That
    // also bounds the first context's cost: what is left of it after the measured costs.
    const uint64_t own = o.nvml_self_bytes > P + cached ? o.nvml_self_bytes - P - cached : 0;
    o.own_code_bytes = std::min(own, rest);
    o.own_code_basis = "nvml";
    o.elsewhere_unsure_bytes = 0;
    o.first_context_bytes = std::min(after_only, o.own_code_bytes > measured ? o.own_code_bytes - measured : 0);
    o.code_not_own_bytes = after_only - o.first_context_bytes;
  } else {
    // Only costs measured with a reading before the call are surely this process's; a first
    // context's (no reading before: no context to ask) may hold other processes' memory of
    // that moment, so it stays elsewhere, said as "up to this may be the first context".
    o.own_code_bytes = std::min(measured, rest);
    o.own_code_basis = measured ? "measured" : "";
    o.elsewhere_unsure_bytes = std::min(after_only, rest - o.own_code_bytes);
    o.first_context_bytes = after_only;
  }
  o.elsewhere_bytes = rest - o.own_code_bytes;
}

Cause other_processes_cause(uint64_t others, uint64_t free_bytes, uint64_t request, double device_total,
                            const std::string& named, const char* request_key, const char* unnamed,
                            uint64_t unsure) {
  bool would_fit = request <= free_bytes + others;
  Cause c{"other_processes", double(others) / device_total + (would_fit ? 0.5 : 0),
          format_bytes(others) + " of the device is held outside this process" +
              (named.empty() ? " (" + std::string(unnamed) + ")" : ": " + named) +
              (unsure ? " as far as the trace tells: up to " + format_bytes(unsure) +
                            " of it may be this process's first context, measured only after it was made"
                      : "") +
              (would_fit ? "; without it the request would fit" : ""),
          {{"other_bytes", others}, {"device_free_bytes", free_bytes}, {request_key, request}}};
  if (unsure) c.evidence["first_context_unsure_bytes"] = unsure;
  return c;
}

std::string other_processes_remedy(uint64_t others, const std::string& named, bool blind) {
  return "Other processes hold " + format_bytes(others) + " of this GPU" + (named.empty() ? "" : " (" + named + ")") +
         (blind && named.empty()
              ? " (NVML cannot see this process's pid here, so it does not name them: run nvidia-smi on the host)"
              : "") +
         ": stop them, or choose a free GPU with CUDA_VISIBLE_DEVICES (nvidia-smi or `vramtrace top` shows who holds "
         "what). This process does not hold that memory: a smaller batch only works around it.";
}

void judge_oom(OomReport& o) {
  split_unattributed(o);
  const double T = double(std::max<uint64_t>(o.device_total_bytes, 1));
  const uint64_t R = o.requested_bytes, F = o.device_free_bytes, P = o.process_device_bytes;
  // The process's own unused memory (pool free space, unmapped VMM handles) and its contexts
  // and code hide inside the not-attributable part; the rest of it is other processes and the
  // driver (split_unattributed).
  uint64_t cached = o.own_cached_bytes;
  uint64_t others = o.elsewhere_bytes;
  std::string named;
  const bool blind = nvml_blind(o);
  if (o.nvml) {
    uint64_t listed = 0;
    for (const GpuProcess& g : o.other_processes) {
      if (g.bytes != kNvmlNotAvailable) listed += g.bytes;
      if (named.size() < 200)
        named += (named.empty() ? "" : ", ") + std::string("pid ") + std::to_string(g.pid) +
                 (g.name.empty() ? "" : " (" + g.name + ")") + " " + format_bytes(g.bytes);
    }
    if (!blind)  // NVML saw the other processes: trust it over the inference
      used_nvml_total(listed, o, others, cached);
    else if (!named.empty())
      named += kNvmlBlindRows;
  }
  uint64_t growth = 0;
  for (const GrowthSite& g : o.grew_before) growth += g.growth_bytes;
  growth = std::min(growth, P);

  std::vector<Cause> causes;
  if (o.device_total_bytes && R > o.device_total_bytes) {
    causes.push_back({"request_exceeds_device", 1.0 + double(R) / T,
                      "the request (" + format_bytes(R) + ") is larger than the whole device (" +
                          format_bytes(o.device_total_bytes) + ")",
                      {{"requested_bytes", R}, {"device_total_bytes", o.device_total_bytes}}});
  }
  // (A first context's cost stays in `others` without NVML: said, not taken off, so that a real
  // "another process holds it" is not turned into "the context costs it".)
  if (double(others) >= 0.05 * T)
    causes.push_back(other_processes_cause(others, F, R, T, named, "requested_bytes",
                                           blind ? kNvmlBlindOthers : "other processes, the driver",
                                           o.nvml ? 0 : o.elsewhere_unsure_bytes));
  // The pool's own limit: the device may have room, the pool may not grow (cuMemPoolCreate's
  // maxSize). Ahead of fragmentation, whose "free but not usable" it otherwise looks like.
  if (o.pool_limit_bytes && o.pool_limit_held_bytes + R > o.pool_limit_bytes)
    causes.push_back({"pool_limit", 1.5,
                      "the pool this allocation draws from is limited to " + format_bytes(o.pool_limit_bytes) +
                          " (its maxSize) and already holds " + format_bytes(o.pool_limit_held_bytes) +
                          ": the request (" + format_bytes(R) + ") does not fit under its limit" +
                          (F >= R ? ", though the device has " + format_bytes(F) + " free" : ""),
                      {{"pool_max_bytes", o.pool_limit_bytes},
                       {"pool_held_bytes", o.pool_limit_held_bytes},
                       {"requested_bytes", R},
                       {"device_free_bytes", F}}});
  if (F >= R || double(cached) >= 0.05 * T) {
    bool would_fit = R <= F + cached;
    double score = F >= R ? 0.9 : double(cached) / T + (would_fit ? 0.5 : 0);
    causes.push_back({"fragmentation", score,
                      F >= R ? "the device reported " + format_bytes(F) + " free, enough for the request, yet "
                                   "the allocation failed: the free memory is not usable in one piece"
                             : format_bytes(cached) + " is reserved by this process but not in use (pool free "
                                   "space, unmapped physical memory)" +
                                   (would_fit ? "; released, it would make room for the request" : ""),
                      {{"cached_bytes", cached},
                       {"pool_cached_bytes", o.pool_cached_bytes},
                       {"vmm_unmapped_bytes", o.vmm_unmapped_bytes},
                       {"device_free_bytes", F},
                       {"requested_bytes", R}}});
  }
  if (growth && (double(growth) >= 0.05 * T || growth * 5 >= P)) {
    bool would_fit = R <= F + growth;
    std::string site = o.grew_before.empty() ? "" : where(o.grew_before[0].site.stack);
    causes.push_back({"leak_growth", double(growth) / double(std::max<uint64_t>(P, 1)) + (would_fit ? 0.5 : 0),
                      format_bytes(growth) + " of the live set grew steadily before the failure" +
                          (site.empty() ? "" : ", most at " + site),
                      {{"growth_bytes", growth},
                       {"growing_sites", o.grew_before.size()},
                       {"process_device_bytes", P}}});
  }
  const uint64_t G = std::min(o.graph_pool_reserved_bytes, P);  // in P (format/accounting.h, rule 9)
  if (G && double(G) >= 0.05 * T) {
    bool would_fit = R <= F + G;
    causes.push_back({"graph_pool", double(G) / T + (would_fit ? 0.5 : 0),
                      format_bytes(G) + " is held by the driver's CUDA graph memory pool (" +
                          format_bytes(o.graph_pool_used_bytes) + " of it bound to graph allocations)" +
                          (would_fit ? "; released, it would make room for the request" : ""),
                      {{"graph_pool_reserved_bytes", G},
                       {"graph_pool_used_bytes", o.graph_pool_used_bytes},
                       {"device_free_bytes", F},
                       {"requested_bytes", R}}});
  }
  {
    uint64_t stable = P - growth - std::min(G, P - growth);
    bool alone_too_big = double(stable) + double(R) > double(o.device_total_bytes) - double(others);
    causes.push_back({"live_set_too_large", double(stable) / T + (alone_too_big ? 0.3 : 0),
                      "this process holds " + format_bytes(P) + " of live device memory" +
                          (alone_too_big ? "; with the request it does not fit on the device" : ""),
                      {{"process_device_bytes", P}, {"requested_bytes", R}, {"device_total_bytes", o.device_total_bytes}}});
  }
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) { return a.score > b.score; });
  o.causes = causes;
  o.verdict = causes.empty() ? "unknown" : causes[0].code;

  std::string top = o.top_holders.empty() ? "" : where(o.top_holders[0].stack) + " (" + format_bytes(o.top_holders[0].bytes) + ")";
  o.remedies.clear();
  if (o.verdict == "request_exceeds_device") {
    o.remedies = {"The request alone (" + format_bytes(R) + ") exceeds the device: no allocator setting can make "
                  "it fit. Split the work: smaller tensors or chunks, sharding across devices, or CPU offload.",
                  "Check the size computation at " + where(o.stack) + ": an unexpectedly huge request is often a "
                  "shape bug."};
  } else if (o.verdict == "other_processes") {
    o.remedies = {other_processes_remedy(others, named, blind),
                  "When sharing a GPU on purpose, cap each process: torch.cuda.set_per_process_memory_fraction, "
                  "XLA_PYTHON_CLIENT_MEM_FRACTION for JAX."};
  } else if (o.verdict == "pool_limit") {
    o.remedies = {"The pool was created with a maxSize of " + format_bytes(o.pool_limit_bytes) +
                      " (cudaMemPoolProps.maxSize / CUmemPoolProps.maxSize): raise it, or create the pool without "
                      "one (0: no limit but the device).",
                  "Or make room inside it: free what it holds (live allocations of this pool), and return what it "
                  "caches with cudaMemPoolTrimTo; or allocate the large request from another pool "
                  "(cudaMallocFromPoolAsync) or with cudaMalloc."};
  } else if (o.verdict == "fragmentation") {
    o.remedies = {"The memory exists but is cached, not live: release it before the large request. With PyTorch, "
                  "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch 2.1 or later) lets segments grow in "
                  "place instead of splitting; torch.cuda.empty_cache() returns cached blocks.",
                  "For stream-ordered pools (cudaMallocAsync), lower the release threshold "
                  "(cudaMemPoolAttrReleaseThreshold) or call cudaMemPoolTrimTo: emptying caches helps here "
                  "because the memory is cached, not in use."};
  } else if (o.verdict == "graph_pool") {
    const uint64_t unused = o.graph_pool_reserved_bytes > o.graph_pool_used_bytes
                                ? o.graph_pool_reserved_bytes - o.graph_pool_used_bytes : 0;
    o.remedies = {"CUDA graphs keep their memory reserved for as long as they exist: every graph captured with "
                  "torch.cuda.graph / torch.cuda.CUDAGraph (and torch.compile's mode=\"reduce-overhead\") holds "
                  "its memory pool; with `PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync` the tensors made "
                  "during capture are graph memory nodes in the driver's graph pool, which "
                  "torch.cuda.empty_cache() does not return.",
                  "Release the graphs you no longer replay (del the CUDAGraph object, or reset() it), share one "
                  "pool between graphs (torch.cuda.graph(pool=...) with torch.cuda.graph_pool_handle()), and "
                  "return what no graph uses with cudaDeviceGraphMemTrim (" + format_bytes(unused) +
                      " of the pool is not bound to any graph allocation now)."};
  } else if (o.verdict == "leak_growth") {
    std::string site = o.grew_before.empty() ? "a call site" : where(o.grew_before[0].site.stack);
    o.remedies = {site + " grew by " + format_bytes(o.grew_before.empty() ? 0 : o.grew_before[0].growth_bytes) +
                      " before the failure: look for tensors or buffers kept across iterations (a loss kept with "
                      "its graph: use loss.item() or loss.detach(); lists that collect outputs; caches keyed by "
                      "step).",
                  "Emptying allocator caches cannot free live memory: the references must go."};
  } else {
    o.remedies = {"Reduce the live set: a smaller batch with gradient accumulation keeps the effective batch size.",
                  "Mixed precision (bf16/fp16) halves activations and weights; activation checkpointing trades "
                  "compute for activation memory.",
                  top.empty() ? "Look first at the largest holders in the report."
                              : "Look first at the largest holder: " + top + "."};
    if (double(others) >= 0.05 * T) o.remedies.push_back(other_processes_remedy(others, named, blind));
  }
}

}  // namespace vt::analyzer
