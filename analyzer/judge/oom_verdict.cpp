// See oom_verdict.h.
#include "oom_verdict.h"

#include "user_frames.h"

#include <algorithm>
#include <cstdio>

#include "byte_size.h"
#include "verdicts.h"

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

uint64_t nvml_others(const OomReport& o, std::string* named) {
  named->clear();
  if (!o.nvml) return 0;
  uint64_t listed = 0;
  for (const GpuProcess& g : o.other_processes) {
    const bool known = g.bytes != kNvmlNotAvailable;  // (none in a MIG instance or unprivileged)
    if (known) listed += g.bytes;
    if (named->size() < 200)
      *named += (named->empty() ? "" : ", ") + std::string("pid ") + std::to_string(g.pid) +
                (g.name.empty() ? "" : " (" + g.name + ")") + " " + (known ? format_bytes(g.bytes) : "(memory not given)");
  }
  if (nvml_blind(o) && !named->empty()) *named += kNvmlBlindRows;
  return listed;
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
  DriverFacts f(o);
  f.T = double(std::max<uint64_t>(o.device_total_bytes, 1));
  f.R = o.requested_bytes, f.F = o.device_free_bytes, f.P = o.process_device_bytes;
  // The process's own unused memory (pool free space, unmapped VMM handles) and its contexts
  // and code hide inside the not-attributable part; the rest of it is other processes and the
  // driver (split_unattributed).
  f.cached = o.own_cached_bytes;
  f.others = o.elsewhere_bytes;
  f.blind = nvml_blind(o);
  const uint64_t listed = nvml_others(o, &f.named);
  if (o.nvml && !f.blind)  // NVML saw the other processes: trust it over the inference
    used_nvml_total(listed, o, f.others, f.cached);
  for (const GrowthSite& g : o.grew_before) f.growth += g.growth_bytes;
  f.growth = std::min(f.growth, f.P);
  f.G = std::min(o.graph_pool_reserved_bytes, f.P);  // in P (format/accounting.h, rule 9)

  std::vector<Cause> causes;
  for (const Verdict& v : verdicts())
    if (v.driver.cause)
      if (std::optional<Cause> c = v.driver.cause(f)) causes.push_back(std::move(*c));
  rank_causes(std::move(causes), o);
  const Verdict* v = find_verdict(o.verdict);
  o.remedies = v && v->driver.remedies ? v->driver.remedies(f) : std::vector<std::string>{};
}

}  // namespace vt::analyzer
