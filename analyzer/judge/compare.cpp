// See compare.h.
#include "compare.h"

#include "user_frames.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "byte_size.h"
#include "record_json.h"
#include "terminal_escape.h"

namespace vt::analyzer {

uint64_t add_bytes(uint64_t a, uint64_t b) { return b > ~a ? ~0ull : a + b; }

int64_t byte_change(uint64_t from, uint64_t to) {
  constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
  if (to >= from) return to - from > kMax ? int64_t(kMax) : int64_t(to - from);
  return from - to > kMax ? -int64_t(kMax) : -int64_t(from - to);
}

int64_t add_changes(int64_t a, int64_t b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t s;
  if (__builtin_add_overflow(a, b, &s)) return a > 0 ? kMax : -kMax;
  return s < -kMax ? -kMax : s;
}

uint64_t magnitude(int64_t change) { return change < 0 ? 0 - uint64_t(change) : uint64_t(change); }

std::string signed_bytes(int64_t change) { return (change < 0 ? "-" : "+") + format_bytes(magnitude(change)); }

std::string site_key(const std::vector<Frame>& full, bool native) {
  size_t hidden = 0;
  std::vector<Frame> stack = user_stack(full, native, &hidden);  // the frames a person sees
  std::string k;
  for (const Frame& f : stack) {
    if (!k.empty()) k += ';';
    if (f.python)
      k += "py:" + f.file.substr(f.file.rfind('/') + 1) + ":" + f.function;
    else if (f.function != "??")
      k += f.function;
    else
      k += "??@" + f.module.substr(f.module.rfind('/') + 1);
  }
  return k.empty() ? "(no stack)" : k;
}

std::string site_label(const std::vector<Frame>& full, int callers, bool native) {
  size_t hidden = 0;
  std::vector<Frame> stack = user_stack(full, native, &hidden);
  if (!native)
    for (const Frame& f : stack)
      if (f.python) return user_line(full);  // "train.py:18 in train_step"
  std::string s;
  for (const Frame& f : stack) {
    if (f.function == "??") continue;
    if (!s.empty()) s += " < ";
    s += f.function;
    if (!f.file.empty()) s += " (" + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line) + ")";
    if (callers-- <= 0) break;
  }
  if (!s.empty()) return s;
  return stack.empty() ? "(no stack)" : "?? in " + stack[0].module.substr(stack[0].module.rfind('/') + 1);
}

TorchPeaks torch_peaks(const TraceReport& r) {
  TorchPeaks p;
  const TorchReport& t = r.torch;
  if (!t.present) {
    p.missing = "no PyTorch in this process";
  } else if (!t.figures()) {
    p.missing = "PyTorch's block layer is " + t.layer + (t.layer_detail.empty() ? "" : " (" + t.layer_detail + ")");
  } else {
    p.known = true;
    for (const TorchDevice& d : t.devices) {
      if (p.allocated_device < 0 || d.peak_allocated > p.allocated) {
        p.allocated = d.peak_allocated;
        p.allocated_device = d.device;
      }
      if (p.reserved_device < 0 || d.peak_reserved > p.reserved) {
        p.reserved = d.peak_reserved;
        p.reserved_device = d.device;
      }
    }
  }
  return p;
}

RunDiff diff_runs(const TraceReport& base, const TraceReport& now, bool native) {
  RunDiff d;
  d.base_peak = base.peaks.empty() ? 0 : base.peaks[0].bytes;
  d.new_peak = now.peaks.empty() ? 0 : now.peaks[0].bytes;
  d.base_leak = base.leak_bytes;
  d.new_leak = now.leak_bytes;
  // PyTorch's figures only when both sides have them: one side's driver figure against the
  // other's allocated would compare two different things.
  TorchPeaks tb = torch_peaks(base), tn = torch_peaks(now);
  if (tb.known && tn.known) {
    d.torch = true;
    d.base_allocated = tb.allocated;
    d.new_allocated = tn.allocated;
    d.base_reserved = tb.reserved;
    d.new_reserved = tn.reserved;
  }
  // Keys leave lines out (they move between two versions of the code), so two sites of one
  // function on the same call path share a key: those are told apart by the order of their
  // lines, on each side (the first line of the function's sites, the second...), whenever either
  // side has more than one.
  auto lines_of = [native](const std::vector<Frame>& stack) {
    size_t hidden = 0;
    std::vector<int> l;
    for (const Frame& f : user_stack(stack, native, &hidden)) l.push_back(f.line);
    return l;
  };
  std::map<std::string, std::set<std::vector<int>>> seen[2];  // key -> its sites' lines, per side
  auto note = [&](const std::vector<SiteGroup>& groups, int side) {
    for (const SiteGroup& g : groups) seen[side][site_key(g.stack, native)].insert(lines_of(g.stack));
  };
  if (!base.peaks.empty()) note(base.peaks[0].live_set, 0);
  note(base.leaks, 0);
  if (!now.peaks.empty()) note(now.peaks[0].live_set, 1);
  note(now.leaks, 1);
  auto key_of = [&](const SiteGroup& g, int side) {
    std::string k = site_key(g.stack, native);
    auto other = seen[1 - side].find(k);
    const auto& mine = seen[side][k];
    if (mine.size() < 2 && (other == seen[1 - side].end() || other->second.size() < 2)) return k;
    auto at = mine.find(lines_of(g.stack));
    return k + "#" + std::to_string(1 + std::distance(mine.begin(), at));
  };
  std::map<std::string, SiteChange> sites;
  auto add = [&](const std::vector<SiteGroup>& groups, bool is_new, bool is_leak) {
    for (const SiteGroup& g : groups) {
      std::string k = key_of(g, is_new ? 1 : 0);
      SiteChange& c = sites[k];
      if (c.key.empty() || is_new) {
        c.key = k;
        c.label = site_label(g.stack, 0, native);
        c.stack = g.stack;
      }
      uint64_t& slot = is_leak ? (is_new ? c.new_leak : c.base_leak) : (is_new ? c.new_peak : c.base_peak);
      slot = add_bytes(slot, g.bytes);
    }
  };
  if (!base.peaks.empty()) add(base.peaks[0].live_set, false, false);
  if (!now.peaks.empty()) add(now.peaks[0].live_set, true, false);
  add(base.leaks, false, true);
  add(now.leaks, true, true);
  for (auto& [k, c] : sites) {
    c.added = c.base_peak == 0 && c.base_leak == 0;
    c.vanished = c.new_peak == 0 && c.new_leak == 0;
    d.sites.push_back(c);
  }
  std::sort(d.sites.begin(), d.sites.end(), [](const SiteChange& a, const SiteChange& b) {
    uint64_t x = magnitude(a.change()), y = magnitude(b.change());
    return x != y ? x > y : a.key < b.key;
  });
  return d;
}

nlohmann::json diff_json(const RunDiff& d, const std::string& base_path, const std::string& new_path, size_t top) {
  nlohmann::json sites = nlohmann::json::array();
  for (const SiteChange& c : d.sites)
    if (sites.size() < top) sites.push_back({{"site", c.label}, {"key", c.key}, {"base_peak_bytes", c.base_peak}, {"new_peak_bytes", c.new_peak},
                     {"peak_change_bytes", c.peak_change()}, {"base_leak_bytes", c.base_leak},
                     {"new_leak_bytes", c.new_leak}, {"leak_change_bytes", c.leak_change()},
                     {"added", c.added}, {"vanished", c.vanished}, {"stack", stack_json(c.stack)}});
  auto change = [](uint64_t from, uint64_t to) {
    return nlohmann::json{{"base_bytes", from}, {"new_bytes", to}, {"change_bytes", byte_change(from, to)}};
  };
  nlohmann::json j = {{"schema", "vramtrace.diff/1"}, {"base", base_path}, {"new", new_path},
                      {"peak", change(d.base_peak, d.new_peak)}};
  if (d.torch)
    j["pytorch"] = {{"peak_allocated", change(d.base_allocated, d.new_allocated)},
                    {"peak_reserved", change(d.base_reserved, d.new_reserved)}};
  j["leaks"] = change(d.base_leak, d.new_leak);
  j["sites"] = sites;
  j["sites_left_out"] = d.sites.size() - sites.size();
  return j;
}

namespace {
uint64_t highest_peak(const TraceReport& r) { return r.peaks.empty() ? 0 : r.peaks[0].bytes; }
// rank -> run, when every readable run has a rank of its own; else empty.
std::map<int, const TraceReport*> by_rank(const std::vector<TraceReport>& v) {
  std::map<int, const TraceReport*> m;
  for (const TraceReport& r : v) {
    if (r.unreadable) continue;
    if (r.process.rank < 0 || !m.emplace(r.process.rank, &r).second) return {};
  }
  return m;
}
}  // namespace

std::vector<RunPair> matched_runs(const std::vector<TraceReport>& base, const std::vector<TraceReport>& now,
                                  bool* ranked) {
  std::vector<RunPair> out;
  auto b = by_rank(base), n = by_rank(now);
  if (!b.empty() && !n.empty() && (b.size() > 1 || n.size() > 1)) {
    for (const auto& [rank, run] : n)
      if (auto it = b.find(rank); it != b.end()) out.push_back({it->second, run});
    if (!out.empty()) {
      if (ranked) *ranked = true;
      return out;
    }
  }
  if (ranked) *ranked = false;
  const TraceReport *bb = nullptr, *nn = nullptr;
  for (const TraceReport& r : base)
    if (!r.unreadable && (!bb || highest_peak(r) > highest_peak(*bb))) bb = &r;
  for (const TraceReport& r : now)
    if (!r.unreadable && (!nn || highest_peak(r) > highest_peak(*nn))) nn = &r;
  if (bb && nn) out.push_back({bb, nn});
  return out;
}

std::string diff_text(const RunDiff& d, size_t top) {
  std::string o;
  auto from_to = [](uint64_t from, uint64_t to) {
    return format_bytes(from) + " -> " + format_bytes(to) + " (" + signed_bytes(byte_change(from, to)) + ")";
  };
  o += "peak: " + from_to(d.base_peak, d.new_peak) +
       (d.torch ? ", device memory as the driver saw it (PyTorch's reserved plus memory outside PyTorch)" : "") + "\n";
  if (d.torch) {
    o += "PyTorch's peak allocated: " + from_to(d.base_allocated, d.new_allocated) + " (max_memory_allocated: live tensors)\n";
    o += "PyTorch's peak reserved: " + from_to(d.base_reserved, d.new_reserved) + " (max_memory_reserved: its segments)\n";
  }
  o += "leaks: " + format_bytes(d.base_leak) + " -> " + format_bytes(d.new_leak) + " (" +
       signed_bytes(byte_change(d.base_leak, d.new_leak)) + ")\n";
  o += "call sites, largest change first:\n";
  size_t shown = 0, changed = 0;
  for (const SiteChange& c : d.sites) {
    if (c.change() == 0) continue;
    if (++changed > top) continue;
    ++shown;
    o += std::string("  ") + (c.added ? "NEW  " : c.vanished ? "GONE " : "     ") + "peak " + signed_bytes(c.peak_change()) +
         ", leaks " + signed_bytes(c.leak_change()) + "  " + terminal_escape(c.label) + "\n";
  }
  if (!shown) o += "  no change\n";
  if (changed > shown) o += "  ... " + std::to_string(changed - shown) + " more changed call site" + (changed - shown == 1 ? "" : "s") + " (--top)\n";
  return o;
}

}  // namespace vt::analyzer
