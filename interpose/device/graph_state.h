// What the hooks must know about CUDA graphs that no single call says: which streams are
// capturing (a stream-ordered allocation on a capturing stream makes a graph node, not memory),
// and the last graph pool figures seen per device (graph memory is taken inside the driver at
// upload/launch, so the hooks sample cuDeviceGetGraphMemAttribute after graph ops, and a sample
// that changed nothing is not recorded). Lock-free, heap-free: it runs on the hook path.
//
// Capture scheme: the capture hooks count the captures begun and not yet ended (a fixed table
// of their streams, so that an end is matched to its begin). While none is active, an
// allocation costs one relaxed load. While one is, every stream-ordered allocation asks the
// driver (the real cuStreamIsCapturing) whether its stream captures: that also catches streams
// that joined a capture through an event wait, which no begin call names. A capture we did not
// see begin (the table overflowed, or the program's own cuStreamIsCapturing answered "active"
// while we counted none) switches to asking on every allocation, for the rest of the run.
#pragma once

#include <atomic>
#include <cstdint>

#include "cuda_decls.h"

namespace vt {

// > 0 while a capture is active, or for good once a capture was missed (graph_state.cpp).
extern std::atomic<int> g_capture_gate;
inline bool captures_possible() { return g_capture_gate.load(std::memory_order_relaxed) > 0; }  // one load
// Whether `stream` is capturing now (asks the driver; _ptsz semantics for stream 0 when `ptsz`).
bool stream_captures(CUstream stream, bool ptsz);
void capture_began(CUstream stream, bool ptsz);
void capture_end_attempted(CUstream stream, bool ptsz);  // after cuStreamEndCapture*, whatever it returned
void capture_status_seen(CUstreamCaptureStatus status);  // the program's cuStreamIsCapturing answered

// Reads the graph pool of `device` (RESERVED_MEM_CURRENT, USED_MEM_CURRENT). Returns false when
// it cannot be read; *changed tells whether it differs from the last sample of that device.
bool sample_graph_pool(int32_t device, uint64_t* reserved, uint64_t* used, bool* changed);

void forget_graph_state();  // after fork: the child has no captures and its own pool

}  // namespace vt
