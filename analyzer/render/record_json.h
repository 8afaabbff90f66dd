// Records and process info as JSON, the machine-readable face of a trace (`vramtrace dump`,
// `vramtrace info`). Field names are documented in docs/trace-format.md.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "symbolizer.h"
#include "torch_model.h"
#include "trace_reader.h"

namespace vt::analyzer {

// One event as a JSON object: op, kind, result, t_ns, tid, device, context, address, size, ...
nlohmann::json event_json(const Record& r);

// The context and device of the memory an address-keyed free gives back. A free's record carries
// no context of its own (the recorder does not ask for one: docs/trace-format.md), so `dump`
// shows its allocation's. Fed every event in order.
class FreedMemoryPlaces {
 public:
  // An allocation: remembered. A free: r's context and device become its allocation's (0 and -1
  // when the allocation is not in the trace).
  void place(Record* r);

 private:
  std::unordered_map<uint64_t, std::pair<uint64_t, int32_t>> live_;
};
// A metadata record under its schema's name ("process", "module", "stack", "kernel", ...: the
// names and fields of docs/trace-format.md), "damaged": true when its payload ends early;
// "unknown" with its tag for a tag this reader does not know. `base_ns`: the trace's start
// (ProcessInfo::start_monotonic_ns), against which kernel activity times are stored.
nlohmann::json meta_json(const Record& r, uint64_t base_ns = 0);
nlohmann::json process_json(const ProcessInfo& p);
// A symbolized stack: [{function, file, line, module, python, inlined}], innermost first.
nlohmann::json stack_json(const std::vector<Frame>& frames);
// Who allocated a group: [{"tid", "name", "bytes"}], biggest first.
nlohmann::json threads_json(const std::vector<ThreadShare>& threads);

}  // namespace vt::analyzer
