// See report_render.h: `vramtrace summary`, one screen per trace (memray's summary and stats):
// the run in one line, the peak and who held it, what was left at the end, each OOM with its
// verdict, the allocations made (count, bytes, sizes as a histogram) and the largest ones.
#include <algorithm>
#include <map>
#include <sstream>

#include "byte_size.h"
#include "compare.h"
#include "cuda_result.h"
#include "oom_verdict.h"
#include "record_json.h"
#include "report_render.h"
#include "terminal_escape.h"
#include "text_words.h"

namespace vt::analyzer {

namespace {

std::string e(const std::string& s) { return terminal_escape(s); }

std::string duration(uint64_t ns) {
  char b[48];
  if (ns < 1000000) snprintf(b, sizeof b, "%.1f us", double(ns) / 1e3);
  else if (ns < 1000000000) snprintf(b, sizeof b, "%.1f ms", double(ns) / 1e6);
  else if (ns < 600000000000ull) snprintf(b, sizeof b, "%.2f s", double(ns) / 1e9);
  else snprintf(b, sizeof b, "%llum%02llus", (unsigned long long)(ns / 60000000000ull), (unsigned long long)(ns / 1000000000ull % 60));
  return b;
}

std::string where(const std::vector<Frame>& stack) { return stack.empty() ? "(no stack recorded)" : site_label(stack, 1); }

std::string size_range(const SizeBucket& b) {
  if (b.min_bytes == 0) return "< " + format_bytes(b.max_bytes);
  if (b.max_bytes == 0) return ">= " + format_bytes(b.min_bytes);
  return format_bytes(b.min_bytes) + " - " + format_bytes(b.max_bytes);
}

// PyTorch's view first, when its block layer was on: the allocated and reserved peaks
// (max_memory_allocated / max_memory_reserved) of the device that peaked highest, and its live
// tensors by the user's line then. False when there is none (the driver's view stands alone).
bool torch_summary(std::ostringstream& o, const TraceReport& r) {
  const TorchReport& t = r.torch;
  if (!t.figures() || t.devices.empty()) return false;
  const TorchDevice* top = &t.devices[0];
  for (const TorchDevice& d : t.devices)
    if (d.peak_allocated > top->peak_allocated) top = &d;
  uint64_t total = 0;
  for (const DeviceInfo& d : r.process.devices)
    if (int(d.ordinal) == top->device) total = d.total_bytes;
  o << "  PyTorch      " << e(t.mode) << (t.devices.size() > 1 ? ", " + count(t.devices.size(), "device") : "") << "\n";
  o << "  peak         allocated " << format_bytes(top->peak_allocated) << ", reserved " << format_bytes(top->peak_reserved)
    << " on GPU " << top->device << " at " << secs(r, top->peak_allocated_t_ns)
    << (total ? " (" + pct_of(top->peak_reserved, total) + " of its " + format_bytes(total) + ")" : "") << "\n";
  size_t n = 0;
  for (const SiteGroup& g : top->peak.holders) {
    if (n++ == 3) break;
    o << (n == 1 ? "               tensors " : "                       ") << format_bytes(g.bytes) << " in "
      << count(g.count, "tensor") << ": " << e(where(g.stack)) << "\n";
  }
  return true;
}

}  // namespace

std::string summary_text(const TraceReport& r, size_t top) {
  std::ostringstream o;
  const ProcessInfo& p = r.process;
  std::string cmd;
  for (const std::string& a : p.argv) cmd += (cmd.empty() ? "" : " ") + a;
  uint64_t base = time_base(r);
  o << "vramtrace summary: " << e(r.path) << "\n";
  o << "  " << e(cmd.empty() ? "?" : cmd) << "  (pid " << p.pid << (p.rank >= 0 ? ", rank " + std::to_string(p.rank) : "")
    << ", " << duration(r.last_t_ns > base ? r.last_t_ns - base : 0) << ", " << count(r.events, "event") << ", "
    << (r.end == "clean_exit" ? "exited"
        : r.partial           ? "damaged trace"
        : r.end == "running"  ? "still running: the trace is being written"
                              : "KILLED: no clean close")
    << ")\n";
  for (const std::string& pr : r.damage) o << "  damaged: " << e(pr) << "\n";

  o << "\n";
  const bool torch = torch_summary(o, r);
  if (r.peaks.empty()) {
    o << "  peak         no device memory was allocated\n";
  } else if (torch) {  // the driver's view after PyTorch's: segments, not tensors
    const DevicePeak& pk = r.peaks[0];
    o << "  driver       " << format_bytes(pk.bytes) << " of device memory at the peak on GPU " << pk.device
      << " (PyTorch's segments and anything else of this process)\n";
  } else {
    const DevicePeak& pk = r.peaks[0];
    uint64_t total = 0;
    for (const DeviceInfo& d : p.devices)
      if (int(d.ordinal) == pk.device) total = d.total_bytes;
    o << "  peak         " << format_bytes(pk.bytes) << " on GPU " << pk.device << " at " << secs(r, pk.t_ns)
      << (total ? " (" + pct_of(pk.bytes, total) + " of its " + format_bytes(total) + ")" : "") << "\n";
    if (!pk.live_set.empty())
      o << "               largest holder " << format_bytes(pk.live_set[0].bytes) << " in "
        << count(pk.live_set[0].count, "allocation") << ": " << e(where(pk.live_set[0].stack)) << "\n";
  }
  o << "  at the end   " << format_bytes(r.leak_bytes) << " in " << count(r.leak_count, torch ? "tensor or allocation" : "allocation")
    << (r.end == "clean_exit" ? " never freed" : " live when the trace ended");
  if (const TorchCacheAtExit& c = r.torch_cache_at_exit; c.known && c.reserved_bytes)
    o << "; not counted: PyTorch's cache, " << format_bytes(c.reserved_bytes) << " reserved"
      << (c.workspace_bytes ? " (" + format_bytes(c.workspace_bytes) + " of it its cuBLAS workspace)" : std::string());
  if (const TorchHostCacheAtExit& h = r.torch_host_cache_at_exit; h.count)
    o << "; not counted: PyTorch's pinned host memory cache, " << format_bytes(h.bytes);
  o << "\n";
  if (!r.leaks.empty()) o << "               largest " << format_bytes(r.leaks[0].bytes) << ": " << e(where(r.leaks[0].stack)) << "\n";
  if (torch && !r.torch.growth.empty()) {
    const TorchGrowth& g = r.torch.growth[0];
    o << "  kept alive   " << e(where(g.stack)) << " kept +" << format_bytes(g.kept_bytes)
      << " of tensors across iterations" << (r.torch.growth.size() > 1 ? " (and " + count(r.torch.growth.size() - 1, "more line") + ")" : "")
      << "\n";
  } else if (!torch && !r.growth.empty())
    o << "  growth       " << count(r.growth.size(), "call site") << " kept growing; the most, +"
      << format_bytes(r.growth[0].growth_bytes) << ": " << e(where(r.growth[0].site.stack)) << "\n";
  if (r.ooms.empty()) {
    o << "  OOMs         none\n";
  } else {
    std::map<std::string, size_t> verdicts;
    for (const OomReport& x : r.ooms) ++verdicts[x.verdict];
    std::string v;
    for (const auto& [name, n] : verdicts) v += (v.empty() ? "" : ", ") + e(name) + (n > 1 ? " x" + std::to_string(n) : "");
    const bool all_torch = std::all_of(r.ooms.begin(), r.ooms.end(), [](const OomReport& x) { return x.torch; });
    o << "  OOMs         " << count(r.oom_count(), all_torch ? "torch.OutOfMemoryError" : "failed allocation") << ": " << v
      << (r.ooms_omitted ? " (of the " + std::to_string(r.ooms.size()) + " detailed)" : "") << "\n";
    size_t shown = 0;
    for (const OomReport& x : r.ooms) {
      if (shown++ == 3) {
        o << "               ... " << (r.oom_count() - 3) << " more (vramtrace oom)\n";
        break;
      }
      if (x.torch) {  // PyTorch's OutOfMemoryError: its request, and the verdict's reason
        o << "               " << secs(r, x.t_ns) << "  torch.OutOfMemoryError: " << format_bytes(x.torch_info.tried_to_allocate)
          << " requested on GPU " << x.device << " at " << e(where(x.stack)) << (x.autograd_thread.empty() ? "" : " (in backward)")
          << "\n               " << e(x.verdict) << ": " << e(x.causes.empty() ? std::string() : x.causes[0].summary) << "\n";
        if (!x.remedies.empty()) o << "               what to do: " << e(x.remedies[0]) << "\n";
        continue;
      }
      o << "               " << secs(r, x.t_ns) << "  " << format_bytes(x.requested_bytes) << " on GPU " << x.device << ", "
        << cuda_result_name(x.result) << ": " << e(x.verdict) << " at " << e(where(x.stack))
        << (x.autograd_thread.empty() ? "" : " (in backward)") << "\n";
    }
  }
  const AllocationStats& a = r.allocations;
  o << "  allocations  " << count(a.count, "allocation") << ", " << format_bytes(a.bytes) << " in all; " << a.freed
    << " freed during the run\n";

  if (!a.histogram.empty()) {
    o << "\nALLOCATION SIZES\n";
    uint64_t most = 1;
    for (const SizeBucket& b : a.histogram) most = std::max(most, b.count);
    for (const SizeBucket& b : a.histogram) {
      char line[160];
      snprintf(line, sizeof line, "  %-22s %10llu  %-30s %s\n", size_range(b).c_str(), (unsigned long long)b.count,
               std::string(size_t(b.count * 30 / most) + (b.count ? 1 : 0) > 30 ? 30 : size_t(b.count * 30 / most) + (b.count ? 1 : 0), '#').c_str(),
               format_bytes(b.bytes).c_str());
      o << line;
    }
  }
  if (!a.largest.empty()) {
    o << "\nLARGEST ALLOCATIONS\n";
    size_t n = 0;
    for (const LargeAllocation& x : a.largest) {
      if (n++ == top) break;
      o << "  " << format_bytes(x.bytes) << "  " << e(x.op) << " on GPU " << x.device << " at " << secs(r, x.t_ns) << ", "
        << (x.freed ? "freed at " + secs(r, x.freed_t_ns) : std::string("never freed")) << "\n      " << e(where(x.stack)) << "\n";
    }
  }
  if (!torch && !r.peaks.empty() && r.peaks[0].live_set.size() > 1) {
    o << "\nAT THE PEAK\n";
    size_t n = 0;
    for (const SiteGroup& g : r.peaks[0].live_set) {
      if (n++ == std::min<size_t>(top, 5)) break;
      o << "  " << format_bytes(g.bytes) << " (" << pct_of(g.bytes, r.peaks[0].bytes) << ") in " << count(g.count, "allocation")
        << ": " << e(where(g.stack)) << "\n";
    }
  }
  o << "\n(vramtrace report for every call stack, vramtrace report --format html for the page)\n";
  return o.str();
}

std::string job_summary_text(const JobReport& job, size_t top) {
  std::string t = job_table_text(job);
  for (const TraceReport& r : job.traces) t += "\n" + summary_text(r, top);
  return t;
}

}  // namespace vt::analyzer
