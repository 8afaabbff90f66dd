// Records and process info as JSON, the machine-readable face of a trace (`vramtrace dump`,
// `vramtrace info`). Field names are documented in docs/trace-format.md.
#pragma once

#include <nlohmann/json.hpp>

#include "symbolizer.h"
#include "trace_reader.h"

namespace vt::analyzer {

// One event as a JSON object: op, kind, result, t_ns, tid, device, context, address, size, ...
nlohmann::json event_json(const Record& r);
// A metadata record ("record": "process" / "device" / "end" / "note" / "unknown").
nlohmann::json meta_json(const Record& r);
nlohmann::json process_json(const ProcessInfo& p);
// A symbolized stack: [{function, file, line, module, python, inlined}], innermost first.
nlohmann::json stack_json(const std::vector<Frame>& frames);

}  // namespace vt::analyzer
