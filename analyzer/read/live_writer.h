// Whether the process that writes a trace is still running: its /dev/shm summary (the one `top`
// reads, format/shm_layout.h) is live, locked by its writer, and names this very file. A trace
// without a clean close is then being written (a report of a training run in progress), not the
// trace of a killed process.
#pragma once

#include <string>

namespace vt::analyzer {

bool trace_still_written(const std::string& trace_path);

}  // namespace vt::analyzer
