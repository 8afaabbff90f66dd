// State shared by the recorder's two halves: recorder.cpp (encoding into per-thread chunks) and
// trace_session.cpp (opening the trace, process/device records, fork, clean close).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "event.h"
#include "trace_file.h"

namespace vt {

extern TraceFile g_file;
// Bumped when the trace is replaced (fork): thread writers holding an older chunk drop it.
extern std::atomic<uint32_t> g_generation;

void encode_event(const Event& e);
bool write_meta(uint8_t tag, const uint8_t* payload, size_t len, uint64_t t);

// Region records that were begun before the trace opened (public_api.cpp).
void flush_pending_regions(uint64_t t);

}  // namespace vt
