// See torch_verdict.h.
#include "torch_verdict.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "aggregators/leaks.h"
#include "byte_size.h"
#include "oom_verdict.h"
#include "user_frames.h"
#include "verdicts.h"

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

void judge_torch_oom(OomReport& o) {
  const TorchOomInfo& t = o.torch_info;
  TorchFacts f(o, t);
  f.T = t.device_total ? t.device_total : o.device_total_bytes;
  f.F = t.device_total ? t.device_free : o.device_free_bytes;
  f.Td = double(std::max<uint64_t>(f.T, 1));
  f.A = t.allocated, f.R = t.reserved, f.U = f.R > f.A ? f.R - f.A : 0;
  f.S = t.block_size, f.X = std::max(t.tried_to_allocate, f.S);
  f.L = t.view.figures.largest_free_block, f.I = t.view.figures.inactive_split;
  f.O = t.outside_bytes;
  // Used memory that is neither PyTorch's segments nor this process's other memory: other
  // processes, this process's CUDA context, the driver. NVML names the other processes.
  uint64_t used = f.T > f.F ? f.T - f.F : 0;
  f.others = used > f.R + f.O ? used - f.R - f.O : 0;
  // This process's contexts and code are its own (split_unattributed, which judge_oom ran); a
  // first context measured only after it was made stays in, said (without NVML's word).
  f.others -= std::min(f.others, o.own_code_bytes);
  f.blind = nvml_blind(o);
  f.unsure = o.nvml ? 0 : std::min(o.elsewhere_unsure_bytes, f.others);
  const uint64_t listed = nvml_others(o, &f.named);
  if (o.nvml && !f.blind)  // NVML sees this process: its list of the others bounds them
    f.others = std::min(f.others, listed);
  // Tensors kept alive across iterations: lines whose live bytes kept rising while the allocator
  // took back at least as much elsewhere (a loop that frees its temporaries but keeps something).
  for (const TorchGrowth& g : t.grew_before) {
    if (!g.kept_bytes || g.freed_meanwhile < g.kept_bytes) continue;
    f.growth += g.kept_bytes;
    if (!f.top_growth) f.top_growth = &g;
  }
  f.growth = std::min(f.growth, f.A);
  if (!t.view.holders.empty()) {
    f.top_holder = user_line(t.view.holders[0].stack);
    if (f.top_holder.empty()) f.top_holder = "an unknown line";
  }

  std::vector<Cause> causes;
  for (const Verdict& v : verdicts())
    if (v.torch.cause)
      if (std::optional<Cause> c = v.torch.cause(f)) causes.push_back(std::move(*c));
  // Fragmentation decides when its free space alone would have held the request, unless another
  // process or memory outside PyTorch holds more than that free space and alone would have made
  // room: that cause takes more of the device, and freeing it is the bigger win.
  if (f.U >= f.S && f.L < f.S)
    for (Cause& c : causes) {
      const uint64_t holds = c.code == "other_processes" ? f.others : c.code == "outside_pytorch" ? f.O : 0;
      if (holds > f.U && f.X <= f.F + holds) c.score = 1.0 + double(holds) / f.Td;
    }
  rank_causes(std::move(causes), o);
  const Verdict* v = find_verdict(o.verdict);
  o.remedies = v && v->torch.remedies ? v->torch.remedies(f) : std::vector<std::string>{};
}

}  // namespace vt::analyzer
