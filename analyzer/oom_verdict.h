// Why an allocation failed: scores each possible cause from the figures of an OomReport, ranks
// them, and words remedies for the person fixing the program. Formulas: docs/metrics.md.
#pragma once

#include "report_model.h"

namespace vt::analyzer {

// Fills o.causes (ranked), o.verdict and o.remedies.
void judge_oom(OomReport& o);

// "1.50 GiB", "512 MiB", "12.0 KiB", "100 B".
std::string human_bytes(uint64_t b);

}  // namespace vt::analyzer
