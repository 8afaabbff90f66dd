// Why an allocation failed: scores each possible cause from the figures of an OomReport, ranks
// them, and words remedies for the person fixing the program. Formulas: docs/metrics.md.
#pragma once

#include "report_model.h"

namespace vt::analyzer {

// Fills o.causes (ranked), o.verdict and o.remedies.
void judge_oom(OomReport& o);

}  // namespace vt::analyzer
