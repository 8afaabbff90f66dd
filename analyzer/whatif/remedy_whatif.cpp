// See remedy_whatif.h.
#include "remedy_whatif.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "byte_size.h"
#include "whatif.h"

namespace vt::analyzer {

namespace {

constexpr const char* kKey = "PYTORCH_CUDA_ALLOC_CONF=";

// The settings a remedy names: each `PYTORCH_CUDA_ALLOC_CONF=...` up to the closing backquote.
std::vector<std::string> named_settings(const std::string& remedy) {
  std::vector<std::string> out;
  for (size_t at = remedy.find(kKey); at != std::string::npos; at = remedy.find(kKey, at + 1)) {
    size_t from = at + strlen(kKey), to = remedy.find_first_of("` \n", from);
    std::string s = remedy.substr(from, to == std::string::npos ? std::string::npos : to - from);
    while (!s.empty() && (s.back() == '.' || s.back() == ',' || s.back() == ';' || s.back() == ')')) s.pop_back();
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

bool fits(const WhatifResult& r, size_t oom) {
  return oom < r.ooms.size() && !r.ooms[oom].would_happen && !r.ooms[oom].not_reached;
}

}  // namespace

void cite_whatif_in_remedies(const std::string& path, const SymbolizerOptions& symbols, TraceReport* rep) {
  WhatifOptions opt;
  opt.symbolizer = symbols;
  std::vector<std::string> names;
  for (const OomReport& o : rep->ooms) {
    if (!o.torch) continue;
    for (const std::string& m : o.remedies)
      for (const std::string& s : named_settings(m)) {
        AllocConf c;
        std::string err;
        if (std::find(names.begin(), names.end(), s) == names.end() && parse_alloc_conf(s, &c, &err) &&
            !c.cuda_malloc_async) {
          names.push_back(s);
          opt.settings.push_back(c);
        }
      }
  }
  if (opt.settings.empty()) return;
  WhatifReport w;
  std::string err;
  if (!run_whatif(path, opt, &w, &err)) return;
  // A PyTorch OOM of the report is whatif's recorded OOM of the same instant (the report details
  // the first ones and the latest: first_and_latest.h).
  for (OomReport& o : rep->ooms) {
    if (!o.torch || o.device != w.recorded.device) continue;
    size_t index = 0;
    while (index < w.recorded.ooms.size() && w.recorded.ooms[index].t_ns != o.torch_info.t_ns) ++index;
    if (index >= w.recorded.ooms.size() || fits(w.baseline, index)) continue;  // the model does not reproduce it
    for (std::string& m : o.remedies) {
      std::string added;
      for (const std::string& s : named_settings(m)) {
        auto it = std::find(names.begin(), names.end(), s);
        if (it == names.end()) continue;
        const WhatifResult& r = w.results[size_t(it - names.begin())];
        const bool would = !fits(r, index);
        o.whatif.push_back({s, r.stats.peak_reserved, w.baseline.stats.peak_reserved, would});
        added += " (vramtrace whatif, this run replayed under " + s + ": peak reserved " +
                 format_bytes(r.stats.peak_reserved) + " instead of " + format_bytes(w.baseline.stats.peak_reserved) +
                 "; this OOM " + (would ? "would still happen" : "would not have happened") + ")";
      }
      if (!added.empty()) {
        if (!m.empty() && m.back() == '.') m.pop_back();
        m += added + ".";
      }
    }
  }
}

}  // namespace vt::analyzer
