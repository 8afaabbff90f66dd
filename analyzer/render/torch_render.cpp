// See torch_render.h.
#include "torch_render.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "byte_size.h"
#include "oom_verdict.h"
#include "record_json.h"
#include "text_words.h"
#include "torch_verdict.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

using nlohmann::json;

std::string line_or_none(const std::vector<Frame>& stack) {
  std::string s = user_line(stack);
  return s.empty() ? "(no stack recorded)" : s;
}

json figures_json(const TorchFigures& f) {
  return {{"allocated_bytes", f.allocated},
          {"reserved_bytes", f.reserved},
          {"reserved_unallocated_bytes", f.reserved_unallocated()},
          {"inactive_split_bytes", f.inactive_split},
          {"largest_free_block_bytes", f.largest_free_block},
          {"segments", f.segments},
          {"blocks", f.blocks}};
}

json holders_json(const std::vector<SiteGroup>& v) {
  json a = json::array();
  for (const SiteGroup& g : v)
    a.push_back({{"line", user_line(g.stack)}, {"bytes", g.bytes}, {"count", g.count}, {"share", g.share},
                 {"device", g.device}, {"stack", stack_json(g.stack)}});
  return a;
}

json view_json(const TorchView& v) {
  json segs = json::array();
  for (const TorchSegment& s : v.segments)
    segs.push_back({{"address", s.address}, {"size", s.size}, {"allocated_bytes", s.allocated},
                    {"free_bytes", s.free()}, {"largest_free_block_bytes", s.largest_free}, {"blocks", s.blocks},
                    {"expandable", s.expandable}, {"allocated_at", user_line(s.stack)}});
  return {{"t_ns", v.t_ns}, {"figures", figures_json(v.figures)}, {"holders", holders_json(v.holders)},
          {"segments", segs}, {"segments_not_shown", v.segments_not_shown}};
}

json growth_json(const std::vector<TorchGrowth>& v) {
  json a = json::array();
  for (const TorchGrowth& g : v) {
    json j = {{"line", user_line(g.stack)}, {"device", g.device}, {"bytes", g.bytes}, {"growth_bytes", g.growth_bytes},
              {"count", g.count}, {"new_highs", g.new_highs}, {"first_t_ns", g.first_t_ns}, {"last_t_ns", g.last_t_ns},
              {"kept_bytes", g.kept_bytes}, {"freed_meanwhile_bytes", g.freed_meanwhile}, {"stack", stack_json(g.stack)}};
    if (!g.threads.empty()) {  // (only when several threads allocated)
      j["threads"] = threads_json(g.threads);
      j["threads_at_site"] = g.threads_at_site;
    }
    a.push_back(j);
  }
  return a;
}

json tensor_timeline_json(const TorchTensorTimeline& tl) {
  json lines = json::array();
  for (const TorchLineSeries& s : tl.lines) lines.push_back({{"line", s.line}, {"values", s.values}});
  return {{"t_ns", tl.t_ns}, {"lines", lines}, {"other", tl.other}};
}

std::string pct(double v) {
  char b[16];
  snprintf(b, sizeof b, "%.0f%%", v * 100);
  return b;
}

void figures_line(std::ostringstream& o, const char* indent, const TorchFigures& f) {
  o << indent << "allocated " << format_bytes(f.allocated) << ", reserved " << format_bytes(f.reserved)
    << " (reserved but unallocated " << format_bytes(f.reserved_unallocated()) << ", inactive split "
    << format_bytes(f.inactive_split) << ", largest free block " << format_bytes(f.largest_free_block) << "); "
    << f.blocks << " tensors in " << f.segments << " segments\n";
}

void view_text(std::ostringstream& o, const TorchView& v, const char* indent, std::string (*esc)(const std::string&),
               size_t holders, size_t segments) {
  std::string in(indent);
  o << in << "live tensors by line:\n";
  size_t shown = 0;
  for (const SiteGroup& g : v.holders) {
    if (shown++ == holders) break;
    char share[16];
    snprintf(share, sizeof share, "%.0f%%", g.share * 100);
    o << in << "  " << format_bytes(g.bytes) << " in " << g.count << " tensor" << (g.count == 1 ? "" : "s") << " (" << share
      << ")  " << esc(line_or_none(g.stack)) << "\n";
  }
  if (v.holders.empty()) o << in << "  (none)\n";
  if (v.segments.empty()) return;
  o << in << "segments with the most free space:\n";
  shown = 0;
  for (const TorchSegment& s : v.segments) {
    if (shown++ == segments) break;
    char addr[24];
    snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(s.address));
    o << in << "  " << addr << " " << format_bytes(s.size) << (s.expandable ? " (expandable)" : "") << ": "
      << format_bytes(s.allocated) << " in " << s.blocks << " tensor" << (s.blocks == 1 ? "" : "s") << ", "
      << format_bytes(s.free()) << " free, largest free block " << format_bytes(s.largest_free) << "\n";
  }
  size_t more = v.segments.size() > segments ? v.segments.size() - segments : 0;
  if (more + v.segments_not_shown) o << in << "  ... " << more + v.segments_not_shown << " more segments\n";
}

}  // namespace

json torch_json(const TorchReport& t) {
  json devices = json::array();
  for (const TorchDevice& d : t.devices) {
    devices.push_back(
        {{"device", d.device},
         {"peak_allocated_bytes", d.peak_allocated},
         {"peak_allocated_t_ns", d.peak_allocated_t_ns},
         {"peak_reserved_bytes", d.peak_reserved},
         {"peak_reserved_t_ns", d.peak_reserved_t_ns},
         {"at_peak", view_json(d.peak)},
         {"worst_fragmentation",
          {{"t_ns", d.worst_fragmentation_t_ns},
           {"figures", figures_json(d.worst_fragmentation)},
           {"unusable_bytes", d.worst_fragmentation.inactive_split},
           {"fragmentation", d.worst_fragmentation_ratio}}},
         {"end", {{"allocated_bytes", d.end_allocated}, {"reserved_bytes", d.end_reserved}}},
         {"timeline",
          {{"allocated", d.allocated_points}, {"reserved", d.reserved_points}, {"inactive_split", d.inactive_split_points}}},
         {"tensor_timeline", tensor_timeline_json(d.tensors)}});
  }
  json marks = json::array();
  for (const TorchMark& m : t.marks) {
    json j = figures_json(m.figures);
    j["name"] = m.name;
    j["kind"] = m.begin ? "begin" : "end";
    j["t_ns"] = m.t_ns;
    j["device"] = m.device;
    j["peak_allocated_bytes"] = m.peak_allocated;
    j["peak_reserved_bytes"] = m.peak_reserved;
    j["alloc_retries"] = m.alloc_retries;
    j["ooms"] = m.ooms;
    marks.push_back(j);
  }
  return {{"mode", t.mode},
          {"layer", t.layer},
          {"layer_detail", t.layer_detail},
          {"forwarded", t.forwarded},
          {"invalid_t_ns", t.invalid_t_ns},
          {"alloc_conf", t.alloc_conf},
          {"no_caching", t.no_caching},
          {"block_events", t.block_events},
          {"oom_events", t.oom_events},
          {"devices", devices},
          {"marks", marks},
          {"growth", growth_json(t.growth)}};
}

json torch_live_at_json(const std::vector<TorchLiveDevice>& v) {
  json devices = json::array();
  for (const TorchLiveDevice& d : v) {
    json segs = json::array();
    for (const TorchLiveSegment& s : d.segments) {
      json blocks = json::array();
      for (const TorchLiveBlock& b : s.blocks)
        blocks.push_back({{"address", b.address}, {"size", b.size}, {"line", b.line}, {"t_ns", b.t_ns}});
      segs.push_back({{"address", s.address}, {"size", s.size}, {"expandable", s.expandable}, {"blocks", blocks}});
    }
    devices.push_back({{"device", d.device}, {"figures", figures_json(d.figures)}, {"segments", segs}});
  }
  return devices;
}

void torch_live_at_text(std::ostringstream& o, const std::vector<TorchLiveDevice>& v, size_t top,
                        std::string (*esc)(const std::string&)) {
  for (const TorchLiveDevice& d : v) {
    o << "  PyTorch, device " << d.device << ": ";
    figures_line(o, "", d.figures);
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_line;  // line -> bytes, tensors
    for (const TorchLiveSegment& s : d.segments)
      for (const TorchLiveBlock& b : s.blocks) {
        auto& e = by_line[b.line.empty() ? "(no stack recorded)" : b.line];
        e.first += b.size;
        e.second++;
      }
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> lines(by_line.begin(), by_line.end());
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    if (!lines.empty()) o << "    live tensors by line:\n";
    for (size_t i = 0; i < lines.size() && i < top; ++i)
      o << "      " << format_bytes(lines[i].second.first) << " in " << lines[i].second.second
        << (lines[i].second.second == 1 ? " tensor  " : " tensors  ") << esc(lines[i].first) << "\n";
    if (lines.size() > top) o << "      ... " << lines.size() - top << " more lines (--top N shows more)\n";
  }
}

bool torch_frag_text(std::ostringstream& o, const TorchReport& t, std::string (*secs)(const TraceReport&, uint64_t),
                     const TraceReport& r) {
  bool any = false;
  for (const TorchDevice& d : t.devices) {
    const TorchFigures& w = d.worst_fragmentation;
    if (!w.inactive_split) continue;
    any = true;
    o << "  PyTorch's cache, device " << d.device << ", at its most fragmented (" << secs(r, d.worst_fragmentation_t_ns)
      << ", when a request needed a new segment or failed): inactive split " << format_bytes(w.inactive_split) << " ("
      << pct(d.worst_fragmentation_ratio) << " of its " << format_bytes(w.reserved)
      << " reserved: free space in segments that still hold tensors), largest free block "
      << format_bytes(w.largest_free_block) << "\n";
  }
  return any;
}

json torch_frag_json(const TorchReport& t) {
  json a = json::array();
  for (const TorchDevice& d : t.devices)
    a.push_back({{"device", d.device}, {"t_ns", d.worst_fragmentation_t_ns}, {"figures", figures_json(d.worst_fragmentation)},
                 {"fragmentation", d.worst_fragmentation_ratio}});
  return a;
}

json torch_oom_json(const TorchOomInfo& t) {
  return {{"t_ns", t.t_ns},
          {"device", t.device},
          {"block_bytes", t.block_size},
          {"tried_to_allocate_bytes", t.tried_to_allocate},
          {"device_total_bytes", t.device_total},
          {"device_free_bytes", t.device_free},
          {"allocated_bytes", t.allocated},
          {"reserved_bytes", t.reserved},
          {"reserved_unallocated_bytes", t.reserved > t.allocated ? t.reserved - t.allocated : 0},
          {"message", t.message},
          {"driver_attempts", t.driver_attempts},
          {"at_oom", view_json(t.view)},
          {"outside_bytes", t.outside_bytes},
          {"outside", holders_json(t.outside)},
          {"grew_before", growth_json(t.grew_before)}};
}

void torch_text(std::ostringstream& o, const TorchReport& t, std::string (*secs)(const TraceReport&, uint64_t),
                const TraceReport& r, std::string (*esc)(const std::string&)) {
  o << "\nPYTORCH (" << esc(t.mode) << ")\n";
  o << "  block events: " << esc(t.layer) << (t.layer_detail.empty() ? "" : ": " + esc(t.layer_detail)) << "\n";
  if (!t.alloc_conf.empty()) o << "  PYTORCH_CUDA_ALLOC_CONF=" << esc(t.alloc_conf) << "\n";
  if (!t.figures()) return;
  for (const TorchDevice& d : t.devices) {
    o << "  device " << d.device << ": peak allocated " << format_bytes(d.peak_allocated) << " at "
      << secs(r, d.peak_allocated_t_ns) << ", peak reserved " << format_bytes(d.peak_reserved) << " at "
      << secs(r, d.peak_reserved_t_ns) << "\n";
    o << "    at the allocated peak: ";
    figures_line(o, "", d.peak.figures);
    view_text(o, d.peak, "    ", esc, 5, 3);
    const TorchFigures& w = d.worst_fragmentation;
    if (w.inactive_split)
      o << "    fragmentation at its worst (" << secs(r, d.worst_fragmentation_t_ns) << "): inactive split "
        << format_bytes(w.inactive_split) << " (" << pct(d.worst_fragmentation_ratio)
        << " of reserved: free space in segments that still hold tensors, which empty_cache() cannot release), "
        << format_bytes(w.reserved_unallocated()) << " reserved but unallocated, largest free block "
        << format_bytes(w.largest_free_block) << "\n";
    o << "    at the end: allocated " << format_bytes(d.end_allocated) << ", reserved " << format_bytes(d.end_reserved) << "\n";
  }
  if (!t.growth.empty()) {
    o << "  tensor lines that kept tensors alive across iterations:\n";
    for (const TorchGrowth& g : t.growth)
      o << "    +" << format_bytes(g.kept_bytes) << " kept (up to " << format_bytes(g.bytes) << ", " << g.count
        << " tensors live at the end, a new high at " << g.new_highs << " sampling checkpoints)  "
        << esc(line_or_none(g.stack)) << (g.threads.empty() ? "" : ", on " + esc(growth_threads_words(g.threads, g.threads_at_site))) << "\n";
  }
}

void torch_oom_text(std::ostringstream& o, const OomReport& x, std::string (*esc)(const std::string&)) {
  const TorchOomInfo& t = x.torch_info;
  o << "     PyTorch: " << esc(t.message) << "\n";
  o << "     request: a block of " << format_bytes(t.block_size) << " (a new segment of " << format_bytes(t.tried_to_allocate)
    << "); the largest free block was " << format_bytes(t.view.figures.largest_free_block);
  if (t.driver_attempts > 1) o << "; " << t.driver_attempts << " failed cudaMalloc calls (the cache was flushed between)";
  o << "\n";
  o << "     at the failure: ";
  figures_line(o, "", t.view.figures);
  if (t.outside_bytes) o << "     outside PyTorch in this process: " << format_bytes(t.outside_bytes) << "\n";
  view_text(o, t.view, "     ", esc, 3, 3);
}

}  // namespace vt::analyzer
