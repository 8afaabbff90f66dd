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
// g_generation (recorder.h), bumped when the trace is replaced (fork): thread writers holding an
// older chunk drop it. encode_event: recorder.h.
bool write_meta(uint8_t tag, const uint8_t* payload, size_t len, uint64_t t);
// A metadata record whose payload is dt and `n` varints, written straight into the thread's chunk
// (no copy): the hot records of other layers (PyTorch's block events, torch_hooks.cpp).
inline constexpr int kMaxVarintFields = 11;  // the payload length stays one varint byte
void encode_varint_record(uint8_t tag, uint64_t t, const uint64_t* v, int n);

// Region records that were begun before the trace opened (public_api.cpp).
void flush_pending_regions(uint64_t t);

}  // namespace vt
