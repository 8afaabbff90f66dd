// See stack_capture.h.
#include "stack_capture.h"

#include "config.h"
#include "native_stack.h"
#include "recorder_internal.h"
#include "stack_index.h"
#include "trace_format.h"

namespace vt {

void configure_stacks(const Config& cfg) { configure_native_stacks(cfg.stack_depth); }

int capture_stack(uint64_t* frames, int cap, uint64_t caller_ip) { return capture_native(frames, cap, caller_ip); }

uint32_t stack_id(const uint64_t* frames, int n, uint64_t t) { return intern_stack(frames, n, t); }

void write_stack_config(uint64_t t) {
  uint8_t payload[64];
  uint8_t* q = payload;
  q = format::put_varint(q, uint64_t(native_stack_depth()));
  q = format::put_varint(q, 0);  // Python frames: not yet
  q = format::put_varint(q, 0);
  write_meta(format::kTagConfig, payload, size_t(q - payload), t);
}

}  // namespace vt
