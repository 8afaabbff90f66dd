// The PyTorch parts of a report, rendered: the "torch" JSON object and an OOM's "torch" object
// (docs/report-schema.md), and the text section PYTORCH and an OOM's PyTorch lines. Called by
// report_json.cpp and report_text.cpp only when PyTorch was seen, so other reports are unchanged.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "report_model.h"

namespace vt::analyzer {

nlohmann::json torch_json(const TorchReport& t);
nlohmann::json torch_oom_json(const TorchOomInfo& t);
// `--at`: PyTorch's segments and blocks at that instant (JSON: every block; text: by line).
nlohmann::json torch_live_at_json(const std::vector<TorchLiveDevice>& v);
void torch_live_at_text(std::ostringstream& o, const std::vector<TorchLiveDevice>& v, size_t top,
                        std::string (*esc)(const std::string&));

// `secs` turns a trace time into "1.234 s" from the start; `esc` escapes a trace string for a terminal.
void torch_text(std::ostringstream& o, const TorchReport& t, std::string (*secs)(const TraceReport&, uint64_t),
                const TraceReport& r, std::string (*esc)(const std::string&));
void torch_oom_text(std::ostringstream& o, const OomReport& x, std::string (*esc)(const std::string&));
// The FRAGMENTATION section's PyTorch part: each device's cache at its most fragmented (inactive
// split), false when it never was. JSON: "fragmentation": {"pytorch": [...]}.
bool torch_frag_text(std::ostringstream& o, const TorchReport& t, std::string (*secs)(const TraceReport&, uint64_t),
                     const TraceReport& r);
nlohmann::json torch_frag_json(const TorchReport& t);

}  // namespace vt::analyzer
