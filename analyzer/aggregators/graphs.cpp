// See graphs.h.
#include "aggregators/graphs.h"

namespace vt::analyzer {

void graphs_finish(const LiveState& live, TraceReport* rep) {
  rep->graphs.clear();
  for (const DeviceTotals& d : live.devices()) {
    if (!d.graph_nodes && !d.graph_reserved_max) continue;
    GraphDevice g;
    g.device = d.device;
    g.pool_reserved_bytes = d.graph_reserved;
    g.pool_used_bytes = d.graph_used;
    g.pool_reserved_max_bytes = d.graph_reserved_max;
    g.nodes = d.graph_nodes;
    g.node_bytes = d.graph_node_bytes;
    g.captured = d.captured;
    g.captured_bytes = d.captured_bytes;
    for (const DevicePeak& p : rep->peaks)
      if (p.device == d.device) {
        auto it = p.by_kind.find(kind_name(MemKind::GraphPool));
        if (it != p.by_kind.end()) g.pool_reserved_at_peak_bytes = it->second;
      }
    rep->graphs.push_back(g);
  }
}

}  // namespace vt::analyzer
