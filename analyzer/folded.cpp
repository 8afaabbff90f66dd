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

std::string folded_peak(const TraceReport& r, bool native) {
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
