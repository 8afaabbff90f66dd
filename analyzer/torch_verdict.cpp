// See torch_verdict.h.
#include "torch_verdict.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "aggregators/leaks.h"
#include "byte_size.h"
#include "oom_verdict.h"
#include "user_frames.h"

namespace vt::analyzer {

std::string torch_format_size(uint64_t size) {
  char b[64];
  if (size <= 1024)
    snprintf(b, sizeof b, "%llu bytes", static_cast<unsigned long long>(size));
  else if (size <= 1048576)
    snprintf(b, sizeof b, "%.2f KiB", double(size) / 1024.0);
  else if (size <= 1073741824ull)
    snprintf(b, sizeof b, "%.2f MiB", double(size) / 1048576.0);
  else
    snprintf(b, sizeof b, "%.2f GiB", double(size) / 1073741824.0);
  return b;
}

std::string torch_oom_message(const TorchOomInfo& t, const std::vector<GpuProcess>& nvml_rows, uint64_t self_pid) {
  uint64_t unallocated = t.reserved > t.allocated ? t.reserved - t.allocated : 0;
  // c10/cuda/CUDACachingAllocator.cpp, reportProcessMemoryInfo: one sentence per NVML row.
  std::string processes;
  for (const GpuProcess& g : nvml_rows) {
    if (g.bytes == kNvmlNotAvailable) continue;
    processes += (g.pid == self_pid ? std::string("Including non-PyTorch memory, this process")
                                    : "Process " + std::to_string(g.pid)) +
                 " has " + torch_format_size(g.bytes) + " memory in use. ";
  }
  return "Tried to allocate " + torch_format_size(t.tried_to_allocate) + ". GPU " + std::to_string(t.device) +
         " has a total capacity of " + torch_format_size(t.device_total) + " of which " + torch_format_size(t.device_free) +
         " is free. " + processes + "Of the allocated memory " + torch_format_size(t.allocated) +
         " is allocated by PyTorch, and " + torch_format_size(unallocated) + " is reserved by PyTorch but unallocated.";
}

namespace {

bool has_module(const StackStore& stacks, const char* prefix) {
  for (const ModuleInfo& m : stacks.modules) {
    size_t slash = m.path.rfind('/');
    std::string base = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    if (base.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool conf_has(const std::string& conf, const char* key, const char* value) {
  // "key:value" among comma-separated options (PyTorch's own syntax), case-insensitive value.
  std::string lower;
  for (char c : conf) lower += char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  std::string want = std::string(key) + ":" + value;
  for (char& c : want) c = char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  size_t at = 0;
  while ((at = lower.find(want, at)) != std::string::npos) {
    bool starts = at == 0 || lower[at - 1] == ',' || lower[at - 1] == ' ';
    size_t end = at + want.size();
    bool ends = end == lower.size() || lower[end] == ',' || lower[end] == ' ';
    if (starts && ends) return true;
    at = end;
  }
  return false;
}

// Symbolizes groups and merges those whose user line is the same (biggest stack kept), biggest first.
void by_line(std::vector<SiteGroup>& groups, Symbolizer& sym, size_t top) {
  std::vector<SiteGroup> out;
  std::map<std::string, size_t> index;
  uint64_t total = 0;
  std::sort(groups.begin(), groups.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  for (SiteGroup& g : groups) {
    if (!g.bytes && !g.count) continue;
    g.stack = sym.stack(g.stack_id);
    total += g.bytes;
    std::string key = user_line(g.stack);
    if (key.empty()) key = "#" + std::to_string(g.stack_id);
    auto [it, inserted] = index.emplace(key, out.size());
    if (inserted) {
      out.push_back(std::move(g));
    } else {
      out[it->second].bytes += g.bytes;
      out[it->second].count += g.count;
      add_thread_shares(out[it->second].threads, g.threads);
    }
  }
  for (SiteGroup& g : out) g.share = total ? double(g.bytes) / double(total) : 0;
  std::stable_sort(out.begin(), out.end(), [](const SiteGroup& a, const SiteGroup& b) { return a.bytes > b.bytes; });
  if (out.size() > top) out.resize(top);
  groups = std::move(out);
}

void symbolize_view(TorchView& v, Symbolizer& sym, size_t top) {
  by_line(v.holders, sym, top);
  for (TorchSegment& s : v.segments) s.stack = s.stack_id ? sym.stack(s.stack_id) : std::vector<Frame>{};
}

void symbolize_growth(std::vector<TorchGrowth>& v, Symbolizer& sym) {
  for (TorchGrowth& g : v) g.stack = sym.stack(g.stack_id);
}

// The tensor timeline's sites merged by line: the 12 biggest lines (by their highest bytes) stay
// lines, the rest join `other`.
void tensor_lines(TorchTensorTimeline& tl, Symbolizer& sym) {
  constexpr size_t kLines = 12;
  std::vector<TorchLineSeries> merged;
  std::map<std::string, size_t> index;
  for (TorchLineSeries& s : tl.lines) {
    s.stack = sym.stack(s.stack_id);
    s.line = user_line(s.stack);
    if (s.line.empty()) s.line = "(no stack recorded)";
    auto [it, added] = index.emplace(s.line, merged.size());
    if (added) {
      merged.push_back(std::move(s));
    } else {
      for (size_t k = 0; k < s.values.size(); ++k) merged[it->second].values[k] += s.values[k];
    }
  }
  auto high = [](const TorchLineSeries& s) { return s.values.empty() ? 0 : *std::max_element(s.values.begin(), s.values.end()); };
  std::stable_sort(merged.begin(), merged.end(), [&](const TorchLineSeries& a, const TorchLineSeries& b) { return high(a) > high(b); });
  for (size_t i = kLines; i < merged.size(); ++i)
    for (size_t k = 0; k < merged[i].values.size() && k < tl.other.size(); ++k) tl.other[k] += merged[i].values[k];
  if (merged.size() > kLines) merged.resize(kLines);
  tl.lines = std::move(merged);
}

// PyTorch's cuBLAS workspaces (one per handle and stream, taken from the caching allocator by
// at::cuda::getCurrentCUDABlasHandle and kept for the process's life: CUBLAS_WORKSPACE_CONFIG sizes
// them) are still allocated at exit in every program that ran a matmul: PyTorch's, not a leak.
bool is_cublas_workspace(const std::vector<Frame>& stack) {
  for (const Frame& f : stack)
    if (f.function.rfind("at::cuda::getCurrentCUDABlasHandle", 0) == 0 ||
        f.function.rfind("at::cuda::getCurrentCUDABlasLtHandle", 0) == 0 ||
        f.function.rfind("at::cuda::getCUDABlasLtWorkspace", 0) == 0)
      return true;
  return false;
}

// (Over the leak groups the report keeps, `--top` of them: a workspace cut from the list stays
// counted in the leaks' total.)
void workspaces_out_of_leaks(TraceReport* rep) {
  TorchCacheAtExit& c = rep->torch_cache_at_exit;
  if (!c.known) return;
  take_out_of_leaks(
      rep, [](const SiteGroup& g) { return g.kind == "tensor" && is_cublas_workspace(g.stack); }, &c.workspace_bytes,
      nullptr);
}

}  // namespace

void finish_torch(const StackStore& stacks, Symbolizer& sym, size_t top, TraceReport* rep) {
  TorchReport& t = rep->torch;
  bool cuda_lib = has_module(stacks, "libc10_cuda.so");
  bool no_caching = t.no_caching == "1";
  bool async = conf_has(t.alloc_conf, "backend", "cudaMallocAsync");
  bool expandable = t.expandable_seen || conf_has(t.alloc_conf, "expandable_segments", "True");
  if (!t.present && !cuda_lib) return;  // no PyTorch in this process: no torch section at all
  t.present = true;
  t.mode = no_caching ? "caching disabled (PYTORCH_NO_CUDA_MEMORY_CACHING=1): every tensor is a driver allocation"
           : async    ? "cudaMallocAsync backend: every tensor is a stream-ordered allocation"
           : expandable ? "caching allocator, expandable segments"
                        : "caching allocator";
  if (t.layer.empty()) {  // no torch record at all
    if (no_caching || async) {
      t.layer = "not used";
      t.layer_detail = "this mode reports every tensor to the driver: the driver-level figures are per tensor";
    } else {
      t.layer = "unavailable";
      t.layer_detail = rep->peaks.empty()
                           ? "libc10_cuda.so was loaded but no segment was allocated"
                           : "libc10_cuda.so was loaded and segments were allocated, but no block event arrived: this "
                             "PyTorch reports its blocks differently (driver-level figures only)";
    }
  }
  for (TorchDevice& d : t.devices) {
    symbolize_view(d.peak, sym, top);
    tensor_lines(d.tensors, sym);
  }
  symbolize_growth(t.growth, sym);
  workspaces_out_of_leaks(rep);
  std::map<uint32_t, std::string> lines;  // `--at`'s blocks: each call site's user line, once
  for (TorchLiveDevice& d : t.live_at)
    for (TorchLiveSegment& s : d.segments)
      for (TorchLiveBlock& b : s.blocks) {
        auto [it, added] = lines.emplace(b.stack_id, std::string());
        if (added && b.stack_id) it->second = user_line(sym.stack(b.stack_id));
        b.line = it->second;
      }
  for (OomReport& o : rep->ooms) {
    if (!o.torch) continue;
    symbolize_view(o.torch_info.view, sym, top);
    by_line(o.torch_info.outside, sym, top);
    symbolize_growth(o.torch_info.grew_before, sym);
    o.torch_info.message = torch_oom_message(o.torch_info, o.nvml_rows, rep->process.pid);
    if (!o.stack_id) o.stack.clear();
    judge_torch_oom(o);
  }
}

namespace {

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

}  // namespace

void judge_torch_oom(OomReport& o) {
  const TorchOomInfo& t = o.torch_info;
  const uint64_t T = t.device_total ? t.device_total : o.device_total_bytes;
  const uint64_t F = t.device_total ? t.device_free : o.device_free_bytes;
  const double Td = double(std::max<uint64_t>(T, 1));
  const uint64_t A = t.allocated, R = t.reserved, U = R > A ? R - A : 0;
  const uint64_t S = t.block_size, X = std::max(t.tried_to_allocate, S);
  const uint64_t L = t.view.figures.largest_free_block, I = t.view.figures.inactive_split;
  const uint64_t O = t.outside_bytes;
  // Used memory that is neither PyTorch's segments nor this process's other memory: other
  // processes, this process's CUDA context, the driver. NVML names the other processes.
  uint64_t used = T > F ? T - F : 0;
  uint64_t others = used > R + O ? used - R - O : 0;
  // This process's contexts and code are its own (split_unattributed, which judge_oom ran); a
  // first context measured only after it was made stays in, said (without NVML's word).
  others -= std::min(others, o.own_code_bytes);
  const bool blind = nvml_blind(o);
  const uint64_t unsure = o.nvml ? 0 : std::min(o.elsewhere_unsure_bytes, others);
  std::string named;
  if (o.nvml) {
    uint64_t listed = 0;
    for (const GpuProcess& g : o.other_processes) {
      listed += g.bytes;
      if (named.size() < 200)
        named += (named.empty() ? "" : ", ") + std::string("pid ") + std::to_string(g.pid) +
                 (g.name.empty() ? "" : " (" + g.name + ")") + " " + format_bytes(g.bytes);
    }
    if (!blind)  // NVML sees this process: its list of the others bounds them
      others = std::min(others, listed);
    else if (!named.empty())
      named += kNvmlBlindRows;
  }
  // Tensors kept alive across iterations: lines whose live bytes kept rising while the allocator
  // took back at least as much elsewhere (a loop that frees its temporaries but keeps something).
  uint64_t growth = 0;
  const TorchGrowth* top_growth = nullptr;
  for (const TorchGrowth& g : t.grew_before) {
    if (!g.kept_bytes || g.freed_meanwhile < g.kept_bytes) continue;
    growth += g.kept_bytes;
    if (!top_growth) top_growth = &g;
  }
  growth = std::min(growth, A);
  std::string top_holder = t.view.holders.empty() ? "" : line_of(t.view.holders[0].stack);

  std::vector<Cause> causes;
  if (T && S > T)
    causes.push_back({"request_exceeds_device", 1.0 + double(S) / Td,
                      "the tensor (" + format_bytes(S) + ") is larger than the whole device (" + format_bytes(T) + ")",
                      {{"block_bytes", S}, {"device_total_bytes", T}}});
  if (U >= S && L < S) {
    causes.push_back({"fragmentation", 1.0 + double(U) / Td,
                      "PyTorch holds " + format_bytes(U) + " reserved but unallocated, more than the " + format_bytes(S) +
                          " requested, but its largest free block is " + format_bytes(L) + ": the cache is fragmented (" +
                          format_bytes(I) + " is inactive split, free space inside segments that still hold live tensors)",
                      {{"reserved_unallocated_bytes", U}, {"largest_free_block_bytes", L}, {"block_bytes", S},
                       {"inactive_split_bytes", I}, {"reserved_bytes", R}}});
  } else if (double(U) >= 0.05 * Td) {
    bool would_fit = X <= F + U;
    causes.push_back({"fragmentation", double(U) / Td + (would_fit ? 0.5 : 0),
                      format_bytes(U) + " is reserved by PyTorch but unallocated (inactive split " + format_bytes(I) +
                          ") and its largest free block is " + format_bytes(L) +
                          (would_fit ? "; in one piece it would make room for the request" : ""),
                      {{"reserved_unallocated_bytes", U}, {"largest_free_block_bytes", L}, {"block_bytes", S},
                       {"inactive_split_bytes", I}, {"reserved_bytes", R}}});
  }
  if (O && (double(O) >= 0.05 * Td || X <= F + O)) {
    bool would_fit = X <= F + O;
    std::string libs = outside_by_library(t.outside);
    causes.push_back({"outside_pytorch", double(O) / Td + (would_fit ? 0.5 : 0),
                      format_bytes(O) + " of this process's device memory is outside PyTorch's allocator" +
                          (libs.empty() ? "" : ": " + libs) + (would_fit ? "; without it the request would fit" : ""),
                      {{"outside_bytes", O}, {"device_free_bytes", F}, {"tried_to_allocate_bytes", X}}});
  }
  if (double(others) >= 0.05 * Td)
    causes.push_back(other_processes_cause(others, F, X, Td, named, "tried_to_allocate_bytes",
                                           blind          ? kNvmlBlindOthers
                                           : o.code_bytes ? "other processes, the driver"  // (its context: taken off)
                                                          : "other processes, this process's CUDA context, the driver",
                                           unsure));
  if (growth && (double(growth) >= 0.05 * Td || growth * 5 >= A)) {
    bool would_fit = X <= F + growth || S <= U + growth;
    causes.push_back({"leak_growth", double(growth) / double(std::max<uint64_t>(A, 1)) + (would_fit ? 0.5 : 0),
                      format_bytes(growth) + " of live tensors grew steadily before the failure while the loop freed "
                      "its temporaries" +
                          (top_growth ? ", most at " + line_of(top_growth->stack) + " (+" +
                                            format_bytes(top_growth->kept_bytes) + ", " + std::to_string(top_growth->count) +
                                            " tensors live)"
                                      : "") +
                          ": tensors kept alive across iterations",
                      {{"growth_bytes", growth}, {"growing_lines", t.grew_before.size()}, {"allocated_bytes", A}}});
  }
  {
    uint64_t stable = A > growth ? A - growth : 0;
    bool too_big = double(stable) + double(S) > double(T) - double(others) - double(O);
    causes.push_back({"live_set_too_large", double(stable) / Td + (too_big ? 0.3 : 0),
                      "live tensors hold " + format_bytes(A) + " (" + std::to_string(t.view.figures.blocks) + " blocks)" +
                          (top_holder.empty() ? "" : ", the most at " + top_holder) +
                          (too_big ? "; with the request they do not fit on the device" : ""),
                      {{"allocated_bytes", A}, {"block_bytes", S}, {"device_total_bytes", T}}});
  }
  // Fragmentation decides when its free space alone would have held the request, unless another
  // process or memory outside PyTorch holds more than that free space and alone would have made
  // room: that cause takes more of the device, and freeing it is the bigger win.
  if (U >= S && L < S)
    for (Cause& c : causes) {
      const uint64_t holds = c.code == "other_processes" ? others : c.code == "outside_pytorch" ? O : 0;
      if (holds > U && X <= F + holds) c.score = 1.0 + double(holds) / Td;
    }
  std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) { return a.score > b.score; });
  o.causes = causes;
  o.verdict = causes[0].code;

  const std::string req = line_of(o.stack.empty() ? std::vector<Frame>{} : o.stack);
  o.remedies.clear();
  if (o.verdict == "request_exceeds_device") {
    o.remedies = {"One tensor of " + format_bytes(S) + " cannot fit on a " + format_bytes(T) +
                      " device whatever the allocator does: split the work (smaller batch or chunks, sharding across "
                      "devices, CPU offload).",
                  "Check the shape computed at " + req + ": an unexpectedly huge tensor is often a shape bug."};
  } else if (o.verdict == "fragmentation") {
    const bool expandable = std::any_of(t.view.segments.begin(), t.view.segments.end(),
                                        [](const TorchSegment& g) { return g.expandable; });
    const uint64_t split_mb = max_split_size_mb(t.view.segments, S);
    if (!expandable)
      o.remedies.push_back("Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (PyTorch 2.1 or later): segments then "
                           "grow in place and free space does not stay split between live tensors (" + format_bytes(I) +
                           " inactive split at the failure).");
    if (split_mb)
      o.remedies.push_back(std::string(expandable ? "Keep" : "Or keep") + " large blocks whole: `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:" +
                           std::to_string(split_mb) + "` (blocks of " + std::to_string(split_mb) +
                           " MiB and more, as the segments holding the split free space are, are then not split for "
                           "smaller tensors).");
    else
      o.remedies.push_back("max_split_size_mb cannot help here: PyTorch requires more than 20 and still splits every block "
                           "smaller than it, and the split free space sits in segments of 20 MiB or less (or the request is "
                           "that small).");
    o.remedies.push_back("torch.cuda.empty_cache() does not help here: the free space sits in segments that still hold "
                         "live tensors" + (top_holder.empty() ? "" : " (the most at " + top_holder + ")") +
                         ". Allocating the largest tensors first, or freeing long-lived tensors in the order they were "
                         "made, keeps the segments whole.");
  } else if (o.verdict == "outside_pytorch") {
    std::string libs = outside_by_library(t.outside);
    o.remedies = {format_bytes(O) + " of device memory belongs to other libraries of this process" +
                      (libs.empty() ? "" : " (" + libs + ")") +
                      ", which PyTorch cannot release: NCCL buffers (NCCL_BUFFSIZE, fewer communicators or "
                      "channels), cuBLAS/cuDNN workspaces (CUBLAS_WORKSPACE_CONFIG), another framework's pool in the same "
                      "process (JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false, CuPy: its memory pool's free_all_blocks()).",
                  "torch.cuda.empty_cache() cannot free this memory: it is not in PyTorch's cache."};
  } else if (o.verdict == "other_processes") {
    o.remedies = {other_processes_remedy(others, named, blind),
                  "When sharing a GPU on purpose, cap each process: torch.cuda.set_per_process_memory_fraction."};
  } else if (o.verdict == "leak_growth") {
    std::string where = top_growth ? line_of(top_growth->stack) : "a line";
    o.remedies = {where + " kept " + format_bytes(top_growth ? top_growth->kept_bytes : growth) +
                      " of tensors alive across iterations: a tensor that outlives its step (a loss summed without "
                      ".item(), an output kept with its graph: .detach() it, a list that collects outputs): `del` it or "
                      "keep a Python number.",
                  "torch.cuda.empty_cache() cannot free live tensors: the references must go."};
  } else {
    o.remedies = {"Reduce the live set" + (top_holder.empty() ? std::string() : " (the most at " + top_holder + ")") +
                      ": a smaller batch, with gradient accumulation to keep the effective batch size.",
                  "Mixed precision (torch.autocast with bf16/fp16) halves activations; activation checkpointing "
                  "(torch.utils.checkpoint) trades compute for activation memory.",
                  "torch.cuda.empty_cache() cannot free live tensors; `del` what is no longer needed before the "
                  "large step."};
    if (double(others) >= 0.05 * Td) o.remedies.push_back(other_processes_remedy(others, named, blind));
  }
}

}  // namespace vt::analyzer
