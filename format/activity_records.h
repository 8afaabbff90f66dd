// The kernel activity records (CUPTI, tags 0x8A..0x91: activity_format.h) as typed structs, each
// with its schema (schema.h): the one statement of the fields' order and wire kinds and of the
// words in docs/trace-format.md's "Kernel activity records" table. Written by
// cupti/activity_encoder.cpp and cupti/status_record.cpp with format::encode, read by
// analyzer/read/activity.cpp with format::decode (the analyzer's KernelActivity, CopyActivity, ... are
// these structs). Times are absolute CLOCK_MONOTONIC ns; the wire carries them relative to the
// trace's start (Wire::Time), durations as end - start (Wire::Duration).
//
// Records holding strings are templates on the string type: Text (a view: the writer's buffers,
// the reader's mapped file) or std::string (what the analyzer keeps).
#pragma once

#include <cstdint>
#include <string>

#include "activity_format.h"
#include "schema.h"

namespace vt::format {

struct KernelRecord {
  uint32_t name_id = 0;  // a kernel name record's id; 0 = no name
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t static_shared = 0, dynamic_shared = 0, registers = 0;
  uint32_t graph_id = 0;
};
#define VT_KERNEL_FIELDS(F)                                                \
  F(Varint, name_id, "name_id", "name id")                                 \
  F(Varint, device, "device", "device")                                    \
  F(Varint, context, "context", "context id")                              \
  F(Varint, stream, "stream", "stream id")                                 \
  F(Varint, correlation, "correlation", "correlation id")                  \
  F(Time, start_ns, "start_ns", "start")                                   \
  F(Duration, end_ns, "end_ns", "to the end")                                \
  F(Triple, grid, "grid", "grid x, y, z")                                  \
  F(Triple, block, "block", "block x, y, z")                               \
  F(Varint, static_shared, "static_shared", "static shared bytes")         \
  F(Varint, dynamic_shared, "dynamic_shared", "dynamic shared bytes")      \
  F(Varint, registers, "registers", "registers per thread")                \
  F(Varint, graph_id, "graph_id", "graph id")
VT_RECORD_SCHEMA(KernelSchema, kTagKernel, "kernel", VT_KERNEL_FIELDS);

// A memcpy (kTagMemcpy) or a memset (kTagMemset): one struct, two schemas.
struct CopyRecord {
  bool is_memset = false;               // which record it came from (not a field)
  uint32_t copy_kind = 0;               // memcpy: CUpti_ActivityMemcpyKind
  uint32_t src_kind = 0, dst_kind = 0;  // memcpy: CUpti_ActivityMemoryKind
  uint32_t value = 0;                   // memset: the value
  uint32_t memory_kind = 0;             // memset: the target's CUpti_ActivityMemoryKind
  uint64_t bytes = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t flags = 0;  // CUPTI flags (bit 0: async)
  uint32_t graph_id = 0;
};
#define VT_MEMCPY_FIELDS(F)                                                                            \
  F(Varint, copy_kind, "copy_kind", "copy kind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...: CUpti_ActivityMemcpyKind)") \
  F(Varint, src_kind, "src_kind", "src memory kind")                                                  \
  F(Varint, dst_kind, "dst_kind", "dst memory kind")                                                  \
  F(Varint, bytes, "bytes", "bytes")                                                                  \
  F(Varint, device, "device", "device")                                                               \
  F(Varint, context, "context", "context id")                                                         \
  F(Varint, stream, "stream", "stream id")                                                            \
  F(Varint, correlation, "correlation", "correlation id")                                             \
  F(Time, start_ns, "start_ns", "start")                                                              \
  F(Duration, end_ns, "end_ns", "to the end")                                                           \
  F(Varint, flags, "flags", "flags (bit 0: async)")                                                   \
  F(Varint, graph_id, "graph_id", "graph id")
VT_RECORD_SCHEMA(MemcpySchema, kTagMemcpy, "memcpy", VT_MEMCPY_FIELDS);
#define VT_MEMSET_FIELDS(F)                                          \
  F(Varint, value, "value", "value")                                 \
  F(Varint, bytes, "bytes", "bytes")                                 \
  F(Varint, device, "device", "device")                              \
  F(Varint, context, "context", "context id")                        \
  F(Varint, stream, "stream", "stream id")                           \
  F(Varint, correlation, "correlation", "correlation id")            \
  F(Time, start_ns, "start_ns", "start")                             \
  F(Duration, end_ns, "end_ns", "to the end")                          \
  F(Varint, flags, "flags", "flags (bit 0: async)")                  \
  F(Varint, memory_kind, "memory_kind", "memory kind")               \
  F(Varint, graph_id, "graph_id", "graph id")
VT_RECORD_SCHEMA(MemsetSchema, kTagMemset, "memset", VT_MEMSET_FIELDS);

// An allocation or release as CUPTI saw it (MEMORY2).
inline constexpr uint32_t kCuptiMemoryAllocation = 1, kCuptiMemoryRelease = 2;  // CUpti_ActivityMemoryOperationType
struct CuptiMemoryRecord {
  uint32_t operation = 0;    // kCuptiMemoryAllocation / kCuptiMemoryRelease
  uint32_t memory_kind = 0;  // CUpti_ActivityMemoryKind: 1 pageable, 2 pinned, 3 device, 5 managed...
  uint64_t address = 0, bytes = 0, t_ns = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  uint32_t is_async = 0;
  uint64_t pool = 0;       // memory pool address (stream-ordered allocations)
  uint32_t pool_type = 0;  // CUpti_ActivityMemoryPoolType
  uint64_t pc = 0;
  bool release() const { return operation == kCuptiMemoryRelease; }
};
#define VT_CUPTI_MEMORY_FIELDS(F)                                                                       \
  F(Varint, operation, "operation", "operation (1 allocation, 2 release)")                             \
  F(Varint, memory_kind, "memory_kind",                                                                \
    "memory kind (1 pageable, 2 pinned, 3 device, 4 array, 5 managed, 6 device static, 7 managed static)") \
  F(Varint, address, "address", "address")                                                             \
  F(Varint, bytes, "bytes", "bytes")                                                                   \
  F(Time, t_ns, "t_ns", "of the event")                                                                        \
  F(Varint, device, "device", "device")                                                                \
  F(Varint, context, "context", "context id")                                                          \
  F(Varint, stream, "stream", "stream id")                                                             \
  F(Varint, correlation, "correlation", "correlation id")                                              \
  F(Varint, is_async, "is_async", "is async (0/1)")                                                    \
  F(Varint, pool, "pool", "pool address")                                                              \
  F(Varint, pool_type, "pool_type", "pool type (1 local, 2 imported)")                                 \
  F(Varint, pc, "pc", "PC")
VT_RECORD_SCHEMA(CuptiMemorySchema, kTagCuptiMemory, "cupti memory", VT_CUPTI_MEMORY_FIELDS);

struct PoolRecord {
  uint32_t operation = 0;  // 1 created, 2 destroyed, 3 trimmed
  uint32_t pool_type = 0, device = 0;
  uint64_t address = 0, size = 0, release_threshold = 0, min_bytes_to_keep = 0, utilized = 0, t_ns = 0;
  uint32_t correlation = 0;
};
#define VT_POOL_FIELDS(F)                                                                   \
  F(Varint, operation, "operation", "operation (1 created, 2 destroyed, 3 trimmed)")       \
  F(Varint, pool_type, "pool_type", "pool type")                                           \
  F(Varint, device, "device", "device")                                                    \
  F(Varint, address, "address", "address")                                                 \
  F(Varint, size, "size", "size")                                                          \
  F(Varint, release_threshold, "release_threshold", "release threshold")                   \
  F(Varint, min_bytes_to_keep, "min_bytes_to_keep", "min bytes to keep (trim)")            \
  F(Varint, utilized, "utilized", "utilized bytes")                                        \
  F(Time, t_ns, "t_ns", "of the event")                                                            \
  F(Varint, correlation, "correlation", "correlation id")
VT_RECORD_SCHEMA(PoolSchema, kTagMemoryPool, "memory pool", VT_POOL_FIELDS);

template <class Str>
struct NvtxRecordOf {
  uint32_t flags = 0;  // kNvtxInstant / kNvtxStart / kNvtxEnd
  uint32_t id = 0;     // a range's start and end share it
  uint64_t t_ns = 0;
  uint32_t object_kind = 0;             // CUpti_ActivityObjectKind (2 = thread)
  uint32_t object_a = 0, object_b = 0;  // thread: process id, thread id; else device, context
  Str name, domain;                     // name only on start and instant markers
};
using NvtxRecord = NvtxRecordOf<Text>;
#define VT_NVTX_FIELDS(F)                                                                               \
  F(Varint, flags, "flags", "flags (1 instant, 2 range start, 4 range end)")                           \
  F(Varint, id, "id", "id (a start and its end share it)")                                             \
  F(Time, t_ns, "t_ns", "of the event")                                                                        \
  F(Varint, object_kind, "object_kind", "object kind (2 thread, 1 process, 3+ device/context/stream)") \
  F(Varint, object_a, "a", "a (thread: process id; otherwise device)")                                 \
  F(Varint, object_b, "b", "b (thread: thread id; otherwise context)")                                 \
  F(Text, name, "name", "name (start and instant only)")                                               \
  F(Text, domain, "domain", "domain")
VT_RECORD_SCHEMA(NvtxSchema, kTagNvtx, "NVTX marker", VT_NVTX_FIELDS);

// What the kernel recorder is doing: CuptiStatusKind, and per kind what code, value and text mean
// (activity_format.h; docs/trace-format.md, "CUPTI status").
template <class Str>
struct CuptiStatusRecordOf {
  uint8_t kind = 0;  // CuptiStatusKind
  uint64_t code = 0;
  int64_t value = 0;
  Str text;
};
using CuptiStatusRecord = CuptiStatusRecordOf<Text>;
#define VT_CUPTI_STATUS_FIELDS(F)                           \
  F(Varint, kind, "kind", "kind")                           \
  F(Varint, code, "code", "code")                           \
  F(Zigzag, value, "value", "value")                        \
  F(Text, text, "text", "text (table below)")
VT_RECORD_SCHEMA(CuptiStatusSchema, kTagCuptiStatus, "CUPTI status", VT_CUPTI_STATUS_FIELDS);

template <class Str>
struct KernelNameRecordOf {
  uint32_t id = 0;
  Str name;  // as CUPTI gives it: mangled
};
using KernelNameRecord = KernelNameRecordOf<Text>;
#define VT_KERNEL_NAME_FIELDS(F)                                                                    \
  F(Varint, id, "id", "id")                                                                         \
  F(Text, name, "name", "name (as CUPTI gives it: mangled; readers demangle). At most 16 KiB")
VT_RECORD_SCHEMA(KernelNameSchema, kTagKernelName, "kernel name", VT_KERNEL_NAME_FIELDS);

}  // namespace vt::format
