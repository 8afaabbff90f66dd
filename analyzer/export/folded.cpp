// See folded.h: the report's stack groups as folded stacks for flame graph tools.
#include "folded.h"

#include <cstdio>
#include <set>
#include <utility>

#include "terminal_escape.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

// ';' separates frames and '\n' lines: control characters (and the rest of what a terminal
// would act on) are escaped by the one rule (terminal_escape.h), ';' becomes ':'.
void append_clean(std::string& out, const std::string& s) {
  for (char c : terminal_escape(s)) out += c == ';' ? ':' : c;
}

std::string root_frame(const SiteGroup& g) {
  if (g.kind == "device") return "[device " + std::to_string(g.device) + "]";
  return "[" + g.kind + "]";
}

void add_line(std::string& out, const std::string& prefix, const std::string& stack, uint64_t bytes) {
  if (!bytes) return;  // a zero-width frame only clutters the graph
  out += prefix;
  out += stack;
  out += ' ';
  out += std::to_string(bytes);
  out += '\n';
}

}  // namespace

std::string folded_frame(const Frame& f) {
  std::string out;
  if (f.python) out += "py:";
  append_clean(out, f.function.empty() ? std::string("??") : f.function);
  if (!f.file.empty()) {
    out += " (";
    append_clean(out, f.file);
    if (f.line > 0) out += ":" + std::to_string(f.line);
    out += ")";
  } else if (!f.python && !f.module.empty()) {
    char off[32];
    snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
    out += " (";
    append_clean(out, f.module.substr(f.module.rfind('/') + 1));
    out += off;
    out += ")";
  }
  if (f.inlined) out += "_[i]";
  return out;
}

std::string folded_stack(const std::vector<Frame>& full, bool native) {
  if (full.empty()) return "[no stack recorded]";
  size_t hidden = 0;
  std::vector<Frame> stack = user_stack(full, native, &hidden);  // the user's frames (user_frames.h)
  std::string out;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
    if (!out.empty()) out += ';';
    out += folded_frame(*it);
  }
  return out;
}

namespace {

// A tensor line's stack: its frames from the outermost down to the user's line (user_frame), so
// that the line's bytes are claimed by that line and its callers, never by the library frames
// below it that only its biggest call site went through.
std::string tensor_line_stack(const std::vector<Frame>& stack, bool native) {
  const Frame* user = user_frame(stack);
  if (native || !user) return folded_stack(stack, native);
  return folded_stack(std::vector<Frame>(stack.begin() + (user - stack.data()), stack.end()), false);
}

std::string folded_tensors(const TorchReport& t, bool native) {
  std::string out;
  bool per_device = t.devices.size() > 1;
  for (const TorchDevice& d : t.devices) {
    std::string prefix = per_device ? "[device " + std::to_string(d.device) + "];" : "";
    uint64_t listed = 0;
    for (const SiteGroup& g : d.peak.holders) {  // one per user's line, biggest first, --top of them
      add_line(out, prefix, tensor_line_stack(g.stack, native), g.bytes);
      listed += g.bytes;
    }
    const uint64_t allocated = d.peak.figures.allocated;
    add_line(out, prefix, "[other lines]", allocated > listed ? allocated - listed : 0);
  }
  return out;
}

}  // namespace

bool folded_peak_is_tensors(const TraceReport& r) { return r.torch.figures() && !r.torch.devices.empty(); }

std::string folded_peak(const TraceReport& r, bool native, bool driver) {
  if (!driver && folded_peak_is_tensors(r)) return folded_tensors(r.torch, native);
  std::string out;
  bool per_device = r.peaks.size() > 1;
  for (const DevicePeak& p : r.peaks) {
    std::string prefix = per_device ? "[device " + std::to_string(p.device) + "];" : "";
    uint64_t listed = 0;
    for (const SiteGroup& g : merge_shown(p.live_set, native)) {
      add_line(out, prefix, folded_stack(g.stack, native), g.bytes);
      listed += g.bytes;
    }
    add_line(out, prefix, "[other sites]", p.bytes > listed ? p.bytes - listed : 0);
  }
  return out;
}

std::string folded_leaks(const TraceReport& r, bool native) {
  std::set<std::pair<std::string, int>> buckets;
  for (const SiteGroup& g : r.leaks) buckets.insert({g.kind, g.device});
  bool rooted = buckets.size() > 1;
  std::string out;
  uint64_t listed = 0;
  for (const SiteGroup& g : merge_shown(r.leaks, native)) {
    add_line(out, rooted ? root_frame(g) + ";" : "", folded_stack(g.stack, native), g.bytes);
    listed += g.bytes;
  }
  add_line(out, "", "[other sites]", r.leak_bytes > listed ? r.leak_bytes - listed : 0);
  return out;
}

}  // namespace vt::analyzer
