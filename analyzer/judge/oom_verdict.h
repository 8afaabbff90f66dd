// Why an allocation failed: scores each possible cause from the figures of an OomReport, ranks
// them, and words remedies for the person fixing the program. Formulas: docs/metrics.md.
#pragma once

#include "report_model.h"

namespace vt::analyzer {

// Splits the not-attributable memory (used - this process's live) into this process's caches,
// its contexts and code, and what is elsewhere (o.own_cached_bytes, own_code_bytes,
// elsewhere_bytes, elsewhere_unsure_bytes, first_context_bytes): the one rule the text, JSON
// and HTML reports and the verdict all use (docs/metrics.md, "Where the rest of the device is").
// With NVML's figure for this process, what it holds beyond its live memory and caches is its
// own; without it, the costs measured around their calls are, and a first context's cost
// (measured only after it was made) stays elsewhere, named as possibly this process's.
void split_unattributed(OomReport& o);

// What one CUDA context can cost at most (a few hundred MiB on today's GPUs, with room to spare):
// when NVML cannot see this process, a context's cost beyond it is taken to be other processes'
// memory its measurement took in (docs/metrics.md, "Where the rest of the device is").
inline constexpr uint64_t kContextBytesBound = uint64_t(1) << 30;

// NVML listed the device's processes at the failure but no row has this process's pid, though
// it has a context there: NVML cannot see it (a container's PID namespace), and its list can
// neither name the other processes for sure nor bound them.
bool nvml_blind(const OomReport& o);

// The words for memory held outside this process when NVML cannot see it (nvml_blind).
inline constexpr const char* kNvmlBlindOthers =
    "NVML cannot see this process (a container's PID namespace), so nothing names them: the device's used memory "
    "beyond this process's memory, caches and contexts";

// Fills o.causes (ranked), o.verdict and o.remedies (after split_unattributed, which it calls).
void judge_oom(OomReport& o);

// The other_processes cause (one rule for the driver-level and PyTorch verdicts): `others` bytes
// of the device `device_total` held outside this process (`named`: NVML's list, "" when none),
// scored by their share, +0.5 when the request of `request` bytes would fit in free + others.
// `request_key` names the request in the evidence; `unnamed` says what else holds it; `unsure`:
// up to how much of it may be this process's first context (split_unattributed), said, not taken off.
Cause other_processes_cause(uint64_t others, uint64_t free_bytes, uint64_t request, double device_total,
                            const std::string& named, const char* request_key, const char* unnamed,
                            uint64_t unsure = 0);

// Said after NVML's rows when it cannot see this process: one of them may be this process.
inline constexpr const char* kNvmlBlindRows =
    " as NVML lists them, though it cannot see this process (its pids may be another namespace's, this process's "
    "own among them)";

// NVML's other processes at the failure, one rule for both judges: *named lists them as the
// verdicts say them ("pid 42 (python) 2.00 GiB, ...", at most ~200 characters, kNvmlBlindRows
// after them when NVML cannot see this process; "" without NVML's list), and the result is what
// they add up to (a process whose memory NVML could not tell adds nothing).
uint64_t nvml_others(const OomReport& o, std::string* named);

// The first remedy when other processes hold the memory (`named`: NVML's list, "" when none;
// `blind`: NVML cannot see this process), one wording for the driver-level and PyTorch verdicts.
std::string other_processes_remedy(uint64_t others, const std::string& named, bool blind);

}  // namespace vt::analyzer
