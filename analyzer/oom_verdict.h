// Why an allocation failed: scores each possible cause from the figures of an OomReport, ranks
// them, and words remedies for the person fixing the program. Formulas: docs/metrics.md.
#pragma once

#include "report_model.h"

namespace vt::analyzer {

// Fills o.causes (ranked), o.verdict and o.remedies.
void judge_oom(OomReport& o);

// The other_processes cause (one rule for the driver-level and PyTorch verdicts): `others` bytes
// of the device `device_total` held outside this process (`named`: NVML's list, "" when none),
// scored by their share, +0.5 when the request of `request` bytes would fit in free + others.
// `request_key` names the request in the evidence; `unnamed` says what else holds it.
Cause other_processes_cause(uint64_t others, uint64_t free_bytes, uint64_t request, double device_total,
                            const std::string& named, const char* request_key, const char* unnamed);

}  // namespace vt::analyzer
