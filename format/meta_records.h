// The metadata records (trace_format.h's tags, the rows of record_registry.h that are neither
// PyTorch's nor kernel activity) as typed structs, each with its schema (schema.h): the one
// statement of its fields' order, wire kinds, JSON keys and the words of docs/trace-format.md's
// "Metadata records" table. Written by interpose/ with format::encode, read by
// analyzer/read/trace_reader.cpp and the aggregators with format::decode.
// Strings are Text: the writer's buffers, or the reader's view of the mapped file.
#pragma once

#include <cstdint>

#include "schema.h"
#include "trace_format.h"

namespace vt::format {

struct ProcessRecord {
  uint64_t driver_version = 0;  // cuDriverGetVersion, 0 before the driver loaded
  Text argv;                    // /proc/self/cmdline: NUL-separated
  Text exe;                     // /proc/self/exe
};
#define VT_PROCESS_FIELDS(F)                                                                  \
  F(Varint, driver_version, "driver_version", "driver version")                             \
  F(TextList, argv, "argv", "argv (NUL-separated, from /proc/self/cmdline)")                 \
  F(Text, exe, "exe", "exe path")
VT_RECORD_SCHEMA(ProcessSchema, kTagProcess, "process", VT_PROCESS_FIELDS);

struct DeviceRecord {
  uint64_t ordinal = 0;
  uint64_t total_bytes = 0;
  Text name;
  Text uuid;  // CUuuid's 16 raw bytes; all zero when the driver could not say
};
#define VT_DEVICE_FIELDS(F)                                       \
  F(Varint, ordinal, "ordinal", "ordinal")                        \
  F(Varint, total_bytes, "total_bytes", "total bytes")            \
  F(Text, name, "name", "name")                                   \
  F(Bytes, uuid, "uuid", "uuid (16 raw bytes)")
VT_RECORD_SCHEMA(DeviceSchema, kTagDevice, "device", VT_DEVICE_FIELDS);

struct EndRecord {};
#define VT_END_FIELDS(F)
VT_RECORD_SCHEMA(EndSchema, kTagEnd, "end", VT_END_FIELDS);

struct NoteRecord {
  Text text;
};
#define VT_NOTE_FIELDS(F)                                                                              \
  F(Rest, text, "text",                                                                                \
    "a message from the recorder after the trace opened; the Python walker's later verdicts are "      \
    "`Python frames on: ...` (its self-check on the main thread passed; for a CPython newer than the " \
    "table, frames start here) and `Python frames off: ...` (the self-check disagreed: events after "  \
    "it carry native frames only)")
VT_RECORD_SCHEMA(NoteSchema, kTagNote, "note", VT_NOTE_FIELDS);

// A stack: the header, then `frames` rows of one varint each (StackFrameSchema).
struct StackRecord {
  uint32_t id = 0;
  uint32_t frames = 0;
};
#define VT_STACK_FIELDS(F)          \
  F(Varint, id, "id", "id")         \
  F(Count, frames, "frames", "n")
VT_RECORD_SCHEMA(StackSchema, kTagStack, "stack", VT_STACK_FIELDS);
struct StackFrameRow {
  uint64_t frame = 0;
};
#define VT_STACK_FRAME_FIELDS(F) F(Varint, frame, "frame", "frame, innermost first (see Stacks)")
VT_RECORD_SCHEMA(StackFrameSchema, kTagStack, "stack frame", VT_STACK_FRAME_FIELDS);
inline constexpr uint32_t kMaxStackRecordFrames = 4096;  // a reader refuses more (writers: 256)

// A stack written as a change of a base stack, the stack record the same thread wrote before it
// (interpose/stacks/stack_index.cpp): base[0..inner) + `fresh` new frames + base[base_n - outer..base_n),
// innermost first. A new frame at position p is stored as zigzag(frame - reference), where the
// reference is base[p] while p is inside the base's changed middle (p < base_n - outer), else the
// new frame before it (0 for p = 0): a call site replaced by another in the same function costs a
// byte or two instead of a 6-7 byte address. Why: when every event has a new stack (tensor-level
// events from many Python lines), whole stacks were ~200 B per event (docs/PERFORMANCE.md).
struct StackDeltaRecord {
  uint32_t id = 0;
  uint32_t base_back = 0;  // id - base id (> 0)
  uint32_t inner = 0;
  uint32_t outer = 0;
  uint32_t fresh = 0;
};
#define VT_STACK_DELTA_FIELDS(F)                                                                  \
  F(Varint, id, "id", "id")                                                                       \
  F(Varint, base_back, "base_back", "id minus the base stack's id (the writing thread's previous stack record)") \
  F(Varint, inner, "inner", "innermost frames kept from the base")                                \
  F(Varint, outer, "outer", "outermost frames kept from the base")                                \
  F(Count, fresh, "fresh", "n")
VT_RECORD_SCHEMA(StackDeltaSchema, kTagStackDelta, "stack delta", VT_STACK_DELTA_FIELDS);
struct StackDeltaFrameRow {
  int64_t delta = 0;
};
#define VT_STACK_DELTA_FRAME_FIELDS(F) \
  F(Zigzag, delta, "delta", "a new frame minus its reference, innermost first (see Stacks)")
VT_RECORD_SCHEMA(StackDeltaFrameSchema, kTagStackDelta, "stack delta frame", VT_STACK_DELTA_FRAME_FIELDS);

// The reference of new frame p of a stack delta (above). `base`/`base_n`: the base's frames;
// `frames`: the new stack's, of which [0, p) are already known.
inline uint64_t stack_delta_reference(const uint64_t* base, uint32_t base_n, uint32_t outer, const uint64_t* frames,
                                      uint32_t p) {
  if (p + outer < base_n) return base[p];
  return p ? frames[p - 1] : 0;
}

struct ModuleRecord {
  uint64_t bias = 0;  // load bias (dlpi_addr)
  uint64_t lo = 0;    // the mapped range [lo, hi)
  uint64_t hi = 0;
  Text path;
  Text build_id;
};
#define VT_MODULE_FIELDS(F)                                             \
  F(Varint, bias, "bias", "load bias")                                  \
  F(Varint, lo, "start", "start")                                       \
  F(Varint, hi, "end", "end (the mapped range)")                        \
  F(Text, path, "path", "path (absolute)")                              \
  F(Bytes, build_id, "build_id", "build-id (raw bytes)")
VT_RECORD_SCHEMA(ModuleSchema, kTagModule, "module", VT_MODULE_FIELDS);

struct PyCodeRecord {
  uint32_t id = 0;
  uint32_t py_minor = 0;
  uint64_t first_line = 0;
  Text file;
  Text qualname;
  Text linetable;
};
#define VT_PYCODE_FIELDS(F)                                                                           \
  F(Varint, id, "id", "id")                                                                           \
  F(Varint, py_minor, "python_minor",                                                                 \
    "Python minor version (the interpreter's own: 10 selects 3.10's line-table format, 11 and above " \
    "the location table)")                                                                            \
  F(Varint, first_line, "first_line", "first line")                                                   \
  F(Text, file, "file", "file")                                                                       \
  F(Text, qualname, "qualname", "qualified name")                                                     \
  F(Bytes, linetable, "linetable", "raw line table (co_linetable)")
VT_RECORD_SCHEMA(PyCodeSchema, kTagPyCode, "python code", VT_PYCODE_FIELDS);

inline constexpr uint64_t kThreadHasPython = 1;  // ThreadRecord::flags
struct ThreadRecord {
  uint32_t tid = 0;
  uint64_t flags = 0;
  Text name;
};
#define VT_THREAD_FIELDS(F)                                                       \
  F(Varint, tid, "tid", "tid")                                                    \
  F(Varint, flags, "flags", "flags (bit 0: has a Python thread state)")           \
  F(Text, name, "name", "name")
VT_RECORD_SCHEMA(ThreadSchema, kTagThread, "thread", VT_THREAD_FIELDS);

// ConfigRecord::python_status.
inline constexpr int kPythonOff = 0, kPythonOn = 1, kPythonRefused = 2;
struct ConfigRecord {
  uint64_t stack_depth = 0;
  uint64_t python_status = 0;
  Text python_message;
};
#define VT_CONFIG_FIELDS(F)                                                                           \
  F(Varint, stack_depth, "stack_depth", "native stack depth")                                         \
  F(Varint, python_status, "python_status", "Python status (0 off, 1 on, 2 refused)")                \
  F(Text, python_message, "python_message",                                                           \
    "message (`ok`, why Python frames were refused, or for a CPython newer than the table what it is " \
    "read as pending its self-check: docs/python-frames.md)")
VT_RECORD_SCHEMA(ConfigSchema, kTagConfig, "config", VT_CONFIG_FIELDS);

// NVML's compute processes on a device right after a failed allocation: the header, then `count`
// rows (GpuProcessSchema).
struct GpuProcessesRecord {
  uint64_t device = 0;
  uint64_t count = 0;
};
#define VT_GPU_PROCESSES_FIELDS(F)               \
  F(Varint, device, "device", "CUDA device")     \
  F(Count, count, "count", "n")
VT_RECORD_SCHEMA(GpuProcessesSchema, kTagGpuProcesses, "gpu processes", VT_GPU_PROCESSES_FIELDS);
struct GpuProcessRow {
  uint64_t pid = 0;
  uint64_t bytes = 0;
  Text name;
};
#define VT_GPU_PROCESS_FIELDS(F)            \
  F(Varint, pid, "pid", "pid")              \
  F(Varint, bytes, "bytes", "bytes")        \
  F(Text, name, "name", "name")
VT_RECORD_SCHEMA(GpuProcessSchema, kTagGpuProcesses, "gpu process", VT_GPU_PROCESS_FIELDS);

struct RegionRecord {
  uint64_t kind = 0;  // kRegionBegin / kRegionEnd
  Text name;
};
#define VT_REGION_FIELDS(F)                                 \
  F(Varint, kind, "kind", "kind (1 begin, 2 end)")          \
  F(Text, name, "name", "name")
VT_RECORD_SCHEMA(RegionSchema, kTagRegion, "region", VT_REGION_FIELDS);

struct LookupRecord {
  uint32_t kind = 0;  // kLookupReached / kLookupGap / kLookupIsolatedOpen
  Text symbol;        // the name asked for (cuGetProcAddress: the base name; dlsym: the export; an open: the path)
  uint32_t category = 0;  // kLookupCategory*: what the entry point does to memory (a gap's)
  uint32_t version = 0;   // cuGetProcAddress's CUDA version argument (0: dlsym)
  uint64_t flags = 0;     // cuGetProcAddress's flags (per-thread default stream...)
};
#define VT_LOOKUP_FIELDS(F)                                                                              \
  F(Varint, kind, "kind",                                                                                \
    "kind (1 the first lookup that reached vramtrace, 2 a memory-relevant entry point handed out unhooked, " \
    "3 a library opened where the hooks cannot reach it)")                                               \
  F(Text, symbol, "symbol", "symbol asked for (kind 3: the library's path as given to dlopen)")          \
  F(Varint, category, "category",                                                                        \
    "category (1 allocation, 2 free, 3 mapping, 4 pool, 5 graph, 6 sharing, 7 context: memory_entry_points.txt; " \
    "kind 3: 1 when the LD_AUDIT module hands it the hooks)")                                            \
  F(Varint, version, "version", "CUDA version asked for (0: dlsym; kind 3: 1 when dlmopen put it in another namespace)") \
  F(Varint, flags, "flags", "cuGetProcAddress flags (kind 3: the dlopen mode)")
VT_RECORD_SCHEMA(LookupSchema, kTagLookup, "lookup", VT_LOOKUP_FIELDS);

// The stream-ordered pools of a device right after an allocation on it failed (the device's
// current and default pools, the pool the failed call named, the device pools this run created
// or named), read with cuMemPoolGetAttribute: the header, then `count` rows (PoolUsageRowSchema).
struct PoolUsageRecord {
  uint64_t device = 0;
  uint64_t count = 0;
};
#define VT_POOL_USAGE_FIELDS(F)                  \
  F(Varint, device, "device", "CUDA device")     \
  F(Count, count, "count", "n")
VT_RECORD_SCHEMA(PoolUsageSchema, kTagPoolUsage, "pool usage", VT_POOL_USAGE_FIELDS);
struct PoolUsageRow {
  uint64_t pool = 0;
  uint64_t location = 0;  // type << 32 | id (a device pool: its device)
  uint64_t reserved = 0;  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
  uint64_t used = 0;      // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
};
#define VT_POOL_USAGE_ROW_FIELDS(F)                                        \
  F(Varint, pool, "pool", "pool")                                          \
  F(Varint, location, "location", "location (as in events)")               \
  F(Varint, reserved, "reserved", "reserved bytes (RESERVED_MEM_CURRENT)") \
  F(Varint, used, "used", "used bytes (USED_MEM_CURRENT)")
VT_RECORD_SCHEMA(PoolUsageRowSchema, kTagPoolUsage, "pool usage row", VT_POOL_USAGE_ROW_FIELDS);
inline constexpr uint64_t kMaxPoolUsageRows = 64;

// A successful synchronize (cuCtxSynchronize*, cuStreamSynchronize*, cuEventSynchronize) in a
// context of `device`, written only when a stream-ordered free or a release threshold change came
// before it since the last one (interpose/device/pool_sync.h): where pools give memory above their release
// threshold back (format/accounting.h, rule 15).
struct PoolSyncRecord {
  uint64_t device = 0;
};
#define VT_POOL_SYNC_FIELDS(F) F(Varint, device, "device", "CUDA device")
VT_RECORD_SCHEMA(PoolSyncSchema, kTagPoolSync, "pool sync", VT_POOL_SYNC_FIELDS);

}  // namespace vt::format
