// CUDA graphs as the report shows them, per device: the driver's graph pool (its last sample, its
// highest, its share of the peak) and the graph memory nodes made, captured or added (no memory
// of their own: format/accounting.h, rules 8 and 9). Read from the replay's device totals at the
// end; nothing to do per event beyond what LiveState already keeps.
#pragma once

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

// Fills rep->graphs (devices with graph activity only). After the peaks are in rep.
void graphs_finish(const LiveState& live, TraceReport* rep);

}  // namespace vt::analyzer
