// The PyTorch block-layer records (tags 0x93..0x96: trace_format.h) as typed structs, each with
// its schema (schema.h): the one statement of the fields' order and wire kinds and of the words
// in docs/trace-format.md's "PyTorch block records" table. Written by interpose/torch/torch_hooks.cpp
// (block and OOM records through the recorder's event path, which appends the stack id last;
// status and config records with format::encode), read by analyzer/read/torch_records.cpp with
// format::decode.
#pragma once

#include <cstdint>

#include "schema.h"
#include "trace_format.h"

namespace vt::format {

struct TorchBlockRecord {
  uint32_t device = 0;  // c10::DeviceIndex (= the CUDA ordinal)
  uint64_t address = 0;
  int64_t size = 0;  // > 0 handed out, < 0 taken back: the block's rounded size
  uint64_t total_allocated = 0, total_reserved = 0;
  uint32_t stack = 0;
};
#define VT_TORCH_BLOCK_FIELDS(F)                                                                          \
  F(Varint, device, "device", "device index (c10, = CUDA ordinal)")                                      \
  F(Varint, address, "address", "address")                                                               \
  F(Zigzag, size, "size", "size (> 0 handed out, < 0 taken back; the block's rounded size)")            \
  F(Varint, total_allocated, "total_allocated",                                                          \
    "total allocated after it (the allocator's `allocated_bytes`, all pools)")                          \
  F(Varint, total_reserved, "total_reserved", "total reserved after it (`reserved_bytes`, all pools)")  \
  F(Varint, stack, "stack", "stack")
VT_RECORD_SCHEMA(TorchBlockSchema, kTagTorchBlock, "torch block", VT_TORCH_BLOCK_FIELDS);

// A block handed out when the hook also saw the request (interpose/torch/request_probe.h): the
// torch block's fields with the requested size PyTorch rounded into it (its `requested_size`).
// Written instead of a torch block (size > 0) for that allocation; frees stay torch blocks.
struct TorchAllocRecord {
  uint32_t device = 0;
  uint64_t address = 0;
  uint64_t size = 0, requested = 0;
  uint64_t total_allocated = 0, total_reserved = 0;
  uint32_t stack = 0;
};
#define VT_TORCH_ALLOC_FIELDS(F)                                                                          \
  F(Varint, device, "device", "device index (c10, = CUDA ordinal)")                                      \
  F(Varint, address, "address", "address")                                                               \
  F(Varint, size, "size", "size (the block's rounded size)")                                             \
  F(Varint, requested, "requested", "requested size (what the program asked for: PyTorch's `requested_size`)") \
  F(Varint, total_allocated, "total_allocated", "total allocated after it (`allocated_bytes`, all pools)") \
  F(Varint, total_reserved, "total_reserved", "total reserved after it (`reserved_bytes`, all pools)")  \
  F(Varint, stack, "stack", "stack")
VT_RECORD_SCHEMA(TorchAllocSchema, kTagTorchAlloc, "torch alloc", VT_TORCH_ALLOC_FIELDS);

// A block handed out on a CUDA stream other than the default one (interpose/torch/current_stream.h):
// a torch alloc with the stream (the cudaStream_t's value, as PyTorch's snapshots give it) before
// the stack. Default-stream blocks stay torch alloc records (a 1.5 reader reads them); the request
// is 0 when the probe did not see it.
struct TorchStreamAllocRecord {
  uint32_t device = 0;
  uint64_t address = 0;
  uint64_t size = 0, requested = 0, stream = 0;
  uint64_t total_allocated = 0, total_reserved = 0;
  uint32_t stack = 0;
};
#define VT_TORCH_STREAM_ALLOC_FIELDS(F)                                                                   \
  F(Varint, device, "device", "device index (c10, = CUDA ordinal)")                                      \
  F(Varint, address, "address", "address")                                                               \
  F(Varint, size, "size", "size (the block's rounded size)")                                             \
  F(Varint, requested, "requested", "requested size (0: not seen)")                                      \
  F(Varint, stream, "stream", "stream (the `cudaStream_t` the block was handed out on, never 0)")       \
  F(Varint, total_allocated, "total_allocated", "total allocated after it (`allocated_bytes`, all pools)") \
  F(Varint, total_reserved, "total_reserved", "total reserved after it (`reserved_bytes`, all pools)")  \
  F(Varint, stack, "stack", "stack")
VT_RECORD_SCHEMA(TorchStreamAllocSchema, kTagTorchStreamAlloc, "torch stream alloc", VT_TORCH_STREAM_ALLOC_FIELDS);

struct TorchOomRecord {
  uint32_t device = 0;
  int64_t size = 0;  // the rounded block size that could not be found
  uint64_t total_allocated = 0, total_reserved = 0;
  uint64_t free_bytes = 0, total_bytes = 0;  // cuMemGetInfo in the hook (0 0: unknown)
  uint32_t stack = 0;
};
#define VT_TORCH_OOM_FIELDS(F)                                                                  \
  F(Varint, device, "device", "device index")                                                  \
  F(Zigzag, size, "size", "size (the rounded block size that could not be found)")            \
  F(Varint, total_allocated, "total_allocated", "total allocated")                             \
  F(Varint, total_reserved, "total_reserved", "total reserved")                                \
  F(Varint, free_bytes, "free_bytes",                                                          \
    "device free (`cuMemGetInfo` read in the hook, as PyTorch just did for its message)")      \
  F(Varint, total_bytes, "total_bytes", "device total (0 0 = unknown)")                       \
  F(Varint, stack, "stack", "stack")
VT_RECORD_SCHEMA(TorchOomSchema, kTagTorchOom, "torch oom", VT_TORCH_OOM_FIELDS);

struct TorchStatusRecord {
  uint32_t state = 0;      // kTorchOn / kTorchOff
  uint32_t forwarded = 0;  // 1: calls reach the real function in another loaded object
  Text message;
};
#define VT_TORCH_STATUS_FIELDS(F)                                                                      \
  F(Varint, state, "state", "state (1 on, 2 off)")                                                    \
  F(Varint, forwarded, "forwarded", "forwarded (1: calls reach the real function in another loaded object)") \
  F(Text, message, "message",                                                                         \
    "message: `forwarding to PATH` or that the real function was not found (state 1), or why the "   \
    "layer turned off (state 2)")
VT_RECORD_SCHEMA(TorchStatusSchema, kTagTorchStatus, "torch status", VT_TORCH_STATUS_FIELDS);

struct TorchConfigRecord {  // "" = unset
  Text cuda_alloc_conf, alloc_conf, no_caching;
};
#define VT_TORCH_CONFIG_FIELDS(F)                                                  \
  F(Text, cuda_alloc_conf, "cuda_alloc_conf", "`PYTORCH_CUDA_ALLOC_CONF`")       \
  F(Text, alloc_conf, "alloc_conf", "`PYTORCH_ALLOC_CONF`")                      \
  F(Text, no_caching, "no_caching", "`PYTORCH_NO_CUDA_MEMORY_CACHING` (empty = unset)")
VT_RECORD_SCHEMA(TorchConfigSchema, kTagTorchConfig, "torch config", VT_TORCH_CONFIG_FIELDS);

}  // namespace vt::format
