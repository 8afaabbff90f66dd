// `vramtrace whatif`'s two outputs, each written once: text for a person (PyTorch's words:
// allocated, reserved, "reserved but unallocated", the OOM's line), and JSON for scripts and CI
// (docs/report-schema.md, "whatif"). Settings are ranked the same way in both (whatif_ranking).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "whatif.h"

namespace vt::analyzer {

// Indices into report.results, best first: fewer OOMs (recorded ones that would still happen,
// plus an OOM the run did not have), then the lower peak reserved.
std::vector<size_t> whatif_ranking(const WhatifReport& report);

std::string whatif_text(const WhatifReport& report);
nlohmann::json whatif_json(const WhatifReport& report);

}  // namespace vt::analyzer
