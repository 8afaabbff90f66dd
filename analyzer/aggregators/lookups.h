// The lookup aggregator: what the recorder's safety net saw (format/meta_records.h, LookupRecord):
// memory-relevant driver entry points the process was handed unhooked (each once, by name), and
// whether any lookup reached vramtrace, and the libraries opened out of the hooks' reach
// (RTLD_DEEPBIND, dlmopen into another namespace), each once. At the end, a trace of format 1.1+ in which libcudart was
// loaded but no lookup arrived is flagged: that cudart finds the driver some other way (dlvsym, a
// future loader) and its memory calls may all be invisible.
#pragma once

#include <set>
#include <string>

#include "report_model.h"
#include "trace_reader.h"

namespace vt::analyzer {

class LookupAggregator {
 public:
  void on_record(const Record& r);
  // `stacks` has the modules; `minor` is the trace's format minor version.
  void finish(const StackStore& stacks, uint32_t minor, TraceReport* rep);

 private:
  InterceptionReport out_;
  std::set<std::string> seen_;
  std::set<std::string> opens_;  // isolated opens already listed (namespace flag + path)
};

}  // namespace vt::analyzer
