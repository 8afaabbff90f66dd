// The records of PyTorch's block layer (format/trace_format.h, 0x93..0x96; written by
// interpose/torch/torch_hooks.cpp), decoded into typed records, and their JSON form for `vramtrace dump`.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "trace_reader.h"

namespace vt::analyzer {

// A block handed out (size > 0) or taken back (size < 0) by the caching allocator, with its
// totals after the change.
struct TorchBlock {
  int device = 0;
  uint64_t addr = 0;
  int64_t size = 0;
  uint64_t total_allocated = 0, total_reserved = 0;
  uint32_t stack = 0;
  uint64_t requested = 0;  // what the program asked for (a torch alloc record); 0 = not known
  uint64_t stream = 0;     // the cudaStream_t it was handed out on (a torch stream alloc); 0 = the default
};
// PyTorch's own out-of-memory report (the figures of its OutOfMemoryError message).
struct TorchOom {
  int device = 0;
  int64_t size = 0;  // the rounded block size it could not find
  uint64_t total_allocated = 0, total_reserved = 0;
  uint64_t device_free = 0, device_total = 0;  // cudaMemGetInfo (0 0: unknown)
  uint32_t stack = 0;
};
struct TorchStatus {
  bool on = false;        // else: the recorder turned the block layer off
  bool forwarded = false;  // calls reach the real libc10 function
  std::string message;
};
struct TorchConfig {  // the allocator's environment (set variables only; "" = unset)
  std::string cuda_alloc_conf, alloc_conf, no_caching;
};

inline bool is_torch_record(uint8_t tag) {
  return (tag >= format::kTagTorchBlock && tag <= format::kTagTorchConfig) || tag == format::kTagTorchAlloc ||
         tag == format::kTagTorchStreamAlloc;
}
// A block handed out or taken back: a torch block, or a torch alloc (one with its request), or a
// torch stream alloc (one on another stream than the default).
inline bool is_torch_block(uint8_t tag) {
  return tag == format::kTagTorchBlock || tag == format::kTagTorchAlloc || tag == format::kTagTorchStreamAlloc;
}
// False when the record is of another tag or its payload is damaged. decode_torch_block takes
// the three block tags (is_torch_block).
bool decode_torch_block(const Record& r, TorchBlock* out);
bool decode_torch_oom(const Record& r, TorchOom* out);
bool decode_torch_status(const Record& r, TorchStatus* out);
bool decode_torch_config(const Record& r, TorchConfig* out);

// One torch record as a `vramtrace dump` line ("op": torch_block, torch_oom, torch_status,
// torch_config), without its stack; null for other records. *stack gets the stack id, if any.
nlohmann::json torch_record_json(const Record& r, uint32_t* stack);

}  // namespace vt::analyzer
