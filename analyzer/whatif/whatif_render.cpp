// See whatif_render.h.
#include "whatif_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "byte_size.h"
#include "terminal_escape.h"

namespace vt::analyzer {

namespace {

size_t oom_count(const WhatifResult& r) {
  size_t n = r.new_oom ? 1 : 0;
  for (const WhatifOom& o : r.ooms) n += o.would_happen && !o.not_reached;
  return n;
}

std::string signed_pct(uint64_t now, uint64_t before) {
  if (!before) return "";
  char buf[32];
  snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (double(now) - double(before)) / double(before));
  return buf;
}

std::string counted(uint64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string where_words(const std::string& where) {
  return where.empty() ? std::string() : " at " + terminal_escape(where);
}

std::string oom_outcome(const WhatifOom& o) {
  if (o.not_reached) return "not reached (the run would have ended at the OOM above)";
  return o.would_happen ? "would still happen" : "would not happen";
}

nlohmann::json oom_json(const WhatifOom& o) {
  nlohmann::json j = {{"t_ns", o.t_ns}, {"size_bytes", o.size}, {"where", o.where}};
  return j;
}

nlohmann::json result_json(const WhatifResult& r) {
  const AllocatorModel::Stats& s = r.stats;
  nlohmann::json ooms = nlohmann::json::array();
  for (const WhatifOom& o : r.ooms) {
    nlohmann::json j = oom_json(o);
    j["would_happen"] = o.would_happen && !o.not_reached;
    j["not_reached"] = o.not_reached;
    ooms.push_back(j);
  }
  nlohmann::json j = {{"alloc_conf", r.conf.text},
                      {"peak_allocated_bytes", s.peak_allocated},
                      {"peak_reserved_bytes", s.peak_reserved},
                      {"reserved_unallocated_at_peak_bytes", s.unallocated_at_peak},
                      {"largest_free_block_at_peak_bytes", s.largest_free_at_peak},
                      {"cache_flushes", s.flushes},
                      {"segments_allocated", s.segments_allocated},
                      {"blocks_replayed", r.blocks},
                      {"ooms", ooms},
                      {"new_oom", r.new_oom ? oom_json(r.first_new_oom) : nlohmann::json(nullptr)}};
  return j;
}

}  // namespace

std::vector<size_t> whatif_ranking(const WhatifReport& report) {
  std::vector<size_t> order(report.results.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const WhatifResult &x = report.results[a], &y = report.results[b];
    if (oom_count(x) != oom_count(y)) return oom_count(x) < oom_count(y);
    return x.stats.peak_reserved < y.stats.peak_reserved;
  });
  return order;
}

std::string whatif_text(const WhatifReport& rep) {
  const WhatifRecorded& rec = rep.recorded;
  const WhatifResult& base = rep.baseline;
  std::string t = "vramtrace whatif: " + terminal_escape(rep.trace) + "\n";
  t += "device " + std::to_string(rec.device) + " (" + format_bytes(rec.device_total) + "): " +
       std::to_string(rec.blocks) + " PyTorch block requests replayed through a model of its caching allocator" +
       (rec.empty_caches ? ", with the run's " + std::to_string(rec.empty_caches) + " torch.cuda.empty_cache() calls" : "") +
       "\n";
  t += "settings of the run: " + (rec.alloc_conf.empty() ? std::string("PyTorch's defaults") : "PYTORCH_CUDA_ALLOC_CONF=" + terminal_escape(rec.alloc_conf));
  if (!rec.conf_understood) t += " (" + terminal_escape(rec.conf_problem) + ": replayed as PyTorch's defaults)";
  t += "\nheld outside PyTorch's cache, as recorded: up to " + format_bytes(rec.outside_peak) +
       " of this process's other allocations, and " + format_bytes(rec.fixed_others) +
       " all along (CUDA contexts and modules" + (rec.ooms.empty() ? "" : ", other processes") + ")\n\n";

  t += "recorded: peak allocated " + format_bytes(rec.peak_allocated) + ", peak reserved " + format_bytes(rec.peak_reserved);
  t += rec.ooms.empty() ? ", no OOM" : ", " + std::to_string(rec.ooms.size()) + (rec.ooms.size() == 1 ? " OOM" : " OOMs");
  t += "\n";
  for (const WhatifOom& o : rec.ooms) t += "  OOM: tried to allocate " + format_bytes(o.size) + where_words(o.where) + "\n";
  double err = rec.peak_reserved ? std::fabs(double(base.stats.peak_reserved) - double(rec.peak_reserved)) / double(rec.peak_reserved) : 0;
  char pct[32];
  snprintf(pct, sizeof pct, "%.1f%%", 100 * err);
  t += "the model under the run's own settings: peak allocated " + format_bytes(base.stats.peak_allocated) +
       ", peak reserved " + format_bytes(base.stats.peak_reserved) + " (" + pct + " from the recorded figure)";
  size_t same = 0;
  for (size_t i = 0; i < base.ooms.size(); i++) same += base.ooms[i].would_happen && !base.ooms[i].not_reached;
  if (rec.ooms.size() == 1) t += same ? "; the recorded OOM happens in it too" : "; the recorded OOM does not happen in it";
  else if (!rec.ooms.empty())
    t += "; " + std::to_string(same) + " of the " + std::to_string(rec.ooms.size()) + " recorded OOMs happen in it too";
  if (base.new_oom) t += "; it runs out of memory where the run did not (" + format_bytes(base.first_new_oom.size) + where_words(base.first_new_oom.where) + ")";
  t += "\n";

  for (size_t i : whatif_ranking(rep)) {
    const WhatifResult& r = rep.results[i];
    const AllocatorModel::Stats& s = r.stats;
    t += "\n" + terminal_escape(alloc_conf_label(r.conf)) + "\n";
    bool placed = false;  // a request that failed in the run fits here: the peaks hold it
    for (const WhatifOom& o : r.ooms) placed |= !o.would_happen && !o.not_reached;
    t += "  peak reserved " + format_bytes(s.peak_reserved) + " instead of " + format_bytes(base.stats.peak_reserved) + " (" +
         signed_pct(s.peak_reserved, base.stats.peak_reserved) + "); peak allocated " + format_bytes(s.peak_allocated) +
         (placed ? " (with the request that failed in the run, which fits here)" : "") + "\n";
    t += "  at that peak: " + format_bytes(s.unallocated_at_peak) + " reserved but unallocated, the largest free block " +
         format_bytes(s.largest_free_at_peak) + "; " + counted(s.flushes, "cache flush", "cache flushes") +
         " (the run's settings: " + std::to_string(base.stats.flushes) + ")\n";
    for (const WhatifOom& o : r.ooms)
      t += "  the OOM" + where_words(o.where) + " (" + format_bytes(o.size) + "): " + oom_outcome(o) + "\n";
    if (r.new_oom)
      t += "  a new OOM: " + format_bytes(r.first_new_oom.size) + where_words(r.first_new_oom.where) +
           " would fail, where the run did not; the replay stops there\n";
  }
  if (!rep.results.empty()) {
    const WhatifResult& best = rep.results[whatif_ranking(rep)[0]];
    size_t best_ooms = oom_count(best), base_ooms = rec.ooms.size();
    t += "\n";
    if (best_ooms < base_ooms || (best_ooms == base_ooms && best.stats.peak_reserved < base.stats.peak_reserved))
      t += "best: PYTORCH_CUDA_ALLOC_CONF=" + terminal_escape(best.conf.text) + " (" +
           (best_ooms == 0 ? std::string("no OOM") : counted(best_ooms, "OOM", "OOMs")) + ", peak reserved " +
           format_bytes(best.stats.peak_reserved) + ")\n";
    else
      t += "none of these settings does better than the run's own: the remedy is less memory live at the peak "
           "(a smaller batch, gradient accumulation, activation checkpointing, bf16)\n";
  }
  t += "\nwhat the replay cannot know:\n";
  for (const std::string& l : rep.limits) t += "  - " + l + "\n";
  if (rec.unmatched_frees) t += "  - " + std::to_string(rec.unmatched_frees) + " frees of blocks allocated before the trace began were skipped\n";
  return t;
}

nlohmann::json whatif_json(const WhatifReport& rep) {
  const WhatifRecorded& rec = rep.recorded;
  nlohmann::json ooms = nlohmann::json::array();
  for (const WhatifOom& o : rec.ooms) ooms.push_back(oom_json(o));
  nlohmann::json j;
  j["schema"] = "vramtrace.whatif/1";
  j["trace"] = rep.trace;
  j["device"] = rec.device;
  j["device_memory_bytes"] = rec.device_total;
  j["recorded"] = {{"alloc_conf", rec.alloc_conf},
                   {"alloc_conf_understood", rec.conf_understood},
                   {"peak_allocated_bytes", rec.peak_allocated},
                   {"peak_reserved_bytes", rec.peak_reserved},
                   {"blocks", rec.blocks},
                   {"requests_known", rec.requests_known},
                   {"empty_cache_calls", rec.empty_caches},
                   {"outside_pytorch_peak_bytes", rec.outside_peak},
                   {"held_all_along_bytes", rec.fixed_others},
                   {"unmatched_frees", rec.unmatched_frees},
                   {"ooms", ooms}};
  j["model_check"] = result_json(rep.baseline);
  nlohmann::json settings = nlohmann::json::array();
  std::vector<size_t> order = whatif_ranking(rep);
  for (size_t i = 0; i < rep.results.size(); i++) {
    nlohmann::json s = result_json(rep.results[i]);
    s["rank"] = size_t(std::find(order.begin(), order.end(), i) - order.begin()) + 1;
    settings.push_back(s);
  }
  j["settings"] = settings;
  j["limits"] = rep.limits;
  return j;
}

}  // namespace vt::analyzer
