// The on-disk trace format, shared by the writer (interpose/) and the reader (analyzer/).
// Owns: file and chunk header layouts, record tags, event field flags and the varint codec.
// docs/trace-format.md is the prose version of this file; keep the two in step.
//
// Layout: a file header in the first 64 KiB slot, then fixed-size 64 KiB chunks. Each writing thread owns one chunk at a
// time and appends length-prefixed records to it; the chunk's `used` word is stored last
// (release), so a reader trusts exactly the bytes a chunk has published. This is what makes a
// trace readable after SIGKILL: the file is written through MAP_SHARED pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vt::format {

inline constexpr char kFileMagic[8] = {'V', 'R', 'A', 'M', 'T', 'R', 'C', '\0'};
inline constexpr uint32_t kVersionMajor = 1;  // readers refuse a different major
inline constexpr uint32_t kVersionMinor = 6;  // readers accept newer minors (new tags are skipped)
// Minor versions: 1.0 the first; 1.1 adds the PyTorch block records (0x93..0x96) and the lookup
// record (0x97), whose absence then means "no lookup reached vramtrace"; 1.2 adds the CUDA graph
// and stream capture ops (codes 38..65) and the "captured" mark (aux2 = 1) on stream-ordered ops,
// and the header's _exit flag (kHeaderQuickExit) with exit_status; 1.3 adds the stack delta record
// (0x98), which a 1.2 reader skips (it then lacks those stacks), the sharing, multicast,
// external memory, mipmapped array and sparse mapping ops and the CUDA 2.x ABI (codes 66..94),
// the context, code and pool-location ops (codes 100..126; the free memory around context and
// code ops), the managed bit of a pool's location, and the pool usage record (0x99) after an
// allocation failure; 1.4 the pool sync record (0x9A); 1.5 the torch alloc record (0x9B); 1.6 the
// torch stream alloc record (0x9C), which a 1.5 reader skips (it sees the frees of blocks handed
// out on another stream than the default one, not their allocations).
inline constexpr uint32_t kChunkSize = 64 * 1024;
inline constexpr uint32_t kFileHeaderSize = kChunkSize;  // the header fills the first chunk slot
inline constexpr uint32_t kChunkMagic = 0x4b435456;  // "VTCK"

// Header flag bits.
inline constexpr uint32_t kHeaderClosedCleanly = 1u << 0;  // the process reached its exit path
inline constexpr uint32_t kHeaderTracingFailed = 1u << 1;  // writing stopped early (disk full...)
inline constexpr uint32_t kHeaderQuickExit = 1u << 2;  // with kHeaderClosedCleanly: left through _exit/_Exit
                                                       // (no exit handlers ran); exit_status holds its status

struct FileHeader {
  char magic[8];
  uint32_t version_major;
  uint32_t version_minor;
  uint32_t header_size;
  uint32_t chunk_size;
  uint64_t pid;
  uint64_t ppid;
  uint64_t start_realtime_ns;   // CLOCK_REALTIME at open
  uint64_t start_monotonic_ns;  // CLOCK_MONOTONIC at open; every t_ns in the file is monotonic
  uint32_t flags;               // kHeader* bits; updated in place
  uint32_t exit_status;         // the status passed to _exit/_Exit, with kHeaderQuickExit (older writers: 0)
  uint64_t end_monotonic_ns;    // set together with kHeaderClosedCleanly
  uint64_t chunks_allocated;    // advisory; readers scan the file instead
  int32_t rank;                 // RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID, -1 if unset
  int32_t local_rank;           // LOCAL_RANK / OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID, -1
  char session[40];             // VRAMTRACE_SESSION: groups the files of one `vramtrace run`
  char hostname[64];
  uint64_t events_lost;         // events that could not be recorded (atomic add); older writers leave 0
  uint64_t pid_namespace;       // the writer's pid namespace (inode of /proc/self/ns/pid); 0: unknown
                                // (older writers). Whether `pid` can be asked about from here.
};
static_assert(sizeof(FileHeader) <= kFileHeaderSize);

struct ChunkHeader {
  uint32_t magic;     // kChunkMagic once the chunk is claimed
  uint32_t used;      // bytes of published records after this header (release store)
  uint32_t tid;       // kernel thread id of the owning thread
  uint32_t index;     // chunk number in the file
  uint64_t base_ns;   // monotonic ns; the first record's dt is relative to it
  uint64_t reserved;
};
static_assert(sizeof(ChunkHeader) == 32);
inline constexpr uint32_t kChunkPayload = kChunkSize - sizeof(ChunkHeader);

// Record = tag (1 byte) + payload length (varint) + payload. Tags 1..127 are memory-operation
// events whose tag is the op code from op_table.h; tags >= 0x80 are metadata. A record's payload
// is its schema's (meta_records.h, pytorch_records.h, activity_records.h), and every metadata
// record is a row of the registry (record_registry.h): these are only the tag numbers.
enum Tag : uint8_t {
  kTagProcess = 0x80,   // ProcessSchema
  kTagDevice = 0x81,    // DeviceSchema
  kTagEnd = 0x82,       // EndSchema: the clean close
  kTagNote = 0x83,      // NoteSchema: a message from the recorder
  kTagStack = 0x84,     // StackSchema + StackFrameSchema rows
  kTagModule = 0x85,    // ModuleSchema
  kTagPyCode = 0x86,    // PyCodeSchema
  kTagThread = 0x87,    // ThreadSchema
  kTagConfig = 0x88,    // ConfigSchema
  kTagGpuProcesses = 0x89,  // GpuProcessesSchema + GpuProcessSchema rows (NVML's list)
  // 0x8A..0x91: kernel activity (CUPTI): activity_format.h
  kTagRegion = 0x92,        // RegionSchema
  // 0x93..0x96: PyTorch's caching allocator, the block layer (interpose/torch/torch_hooks.cpp)
  kTagTorchBlock = 0x93,    // TorchBlockSchema
  kTagTorchOom = 0x94,      // TorchOomSchema
  kTagTorchStatus = 0x95,   // TorchStatusSchema (state: kTorchOn / kTorchOff)
  kTagTorchConfig = 0x96,   // TorchConfigSchema (written at open when a setting is set)
  kTagLookup = 0x97,        // LookupSchema (kinds and categories below)
  kTagStackDelta = 0x98,    // StackDeltaSchema + StackDeltaFrameSchema rows
  kTagPoolUsage = 0x99,     // PoolUsageSchema + PoolUsageRowSchema rows: the pools right after a failure
  kTagPoolSync = 0x9A,      // PoolSyncSchema: a synchronize after a stream-ordered free (rule 15)
  kTagTorchAlloc = 0x9B,    // TorchAllocSchema: a block handed out, with the size the program asked for
  kTagTorchStreamAlloc = 0x9C,  // TorchStreamAllocSchema: the same, on a stream other than the default one
};
inline constexpr uint8_t kTorchOn = 1, kTorchOff = 2;
// kTagLookup: the first lookup that reached vramtrace's cuGetProcAddress or dlsym (cudart's own
// lookups come through there), a memory-relevant entry point handed out unhooked, or a library
// opened where the hooks cannot reach it (RTLD_DEEPBIND, or dlmopen into another namespace: the
// symbol is the path as given, flags the dlopen mode, version 1 for another namespace). A reader
// that knows only kinds 1 and 2 skips kind 3.
inline constexpr uint8_t kLookupReached = 1, kLookupGap = 2, kLookupIsolatedOpen = 3;
// The categories of interpose/entry/memory_entry_points.txt (none and lookup are never recorded).
enum LookupCategory : uint8_t {
  kLookupCategoryNone = 0,
  kLookupCategoryAllocation = 1,
  kLookupCategoryFree = 2,
  kLookupCategoryMapping = 3,
  kLookupCategoryPool = 4,
  kLookupCategoryGraph = 5,
  kLookupCategorySharing = 6,
  kLookupCategoryContext = 7,
};
inline const char* lookup_category_name(uint32_t c) {
  static const char* const kNames[] = {"none", "allocation", "free", "mapping", "pool", "graph", "sharing", "context"};
  return c < sizeof kNames / sizeof kNames[0] ? kNames[c] : "unknown";
}
inline constexpr uint8_t kRegionBegin = 1, kRegionEnd = 2;

// A stack frame (in kTagStack): a native return address, or a Python frame.
inline constexpr uint64_t kFramePython = 1ull << 63;       // Python frame (else native address)
inline constexpr uint64_t kFramePyEntry = 1ull << 62;      // first Python frame of one C-level eval call
inline constexpr int kFrameCodeShift = 32;                 // bits 32..61: code id
inline constexpr uint64_t kFrameCodeMask = (1ull << 30) - 1;
inline constexpr uint64_t kFrameInstrMask = 0xffffffffull;  // bits 0..31: instruction offset
inline uint64_t python_frame(uint32_t code_id, uint32_t instr, bool entry) {
  return kFramePython | (entry ? kFramePyEntry : 0) | (uint64_t(code_id & kFrameCodeMask) << kFrameCodeShift) | instr;
}

// Event payload: varint dt_ns, a flags byte, then the fields of each flag present, in bit order.
// X(enumerator, bit, name, fields): the one statement of the event layout; interpose/record/recorder.cpp
// (encode_event) writes and analyzer/read/trace_reader.cpp (advance) reads exactly this, by hand for
// speed, and docs/trace-format.md's "Events" table is checked against it
// (tests/unit/doc_tables_test.cpp).
#define VT_FOR_EACH_EVENT_FLAG(X)                                                                         \
  X(kEvContext, 0, "CONTEXT",                                                                             \
    "varint context handle, varint device ordinal + 1 (0 = unknown). Sent when the thread's current "     \
    "context differs from the chunk's; otherwise the chunk's current value applies")                      \
  X(kEvStream, 1, "STREAM",                                                                               \
    "varint stream handle. Only for stream-ordered ops, only when it changes; initial value 0")           \
  X(kEvFailed, 2, "FAILED",                                                                               \
    "varint CUresult, varint device free bytes, varint device total bytes (cuMemGetInfo at the failure; " \
    "0/0 if it could not be read)")                                                                       \
  X(kEvAddr, 3, "ADDR", "zigzag varint delta from the chunk's previous address")                          \
  X(kEvSize, 4, "SIZE", "varint bytes")                                                                   \
  X(kEvAux, 5, "AUX", "varint, meaning per op (below)")                                                   \
  X(kEvAux2, 6, "AUX2", "varint, meaning per op (below)")                                                 \
  X(kEvStack, 7, "STACK", "varint stack id (a `stack` record, below); absent when stacks are off, and on a driver-level free unless `VRAMTRACE_FREE_STACKS=1`")

enum EventFlag : uint8_t {
#define VT_EVENT_FLAG_ENUM(e, bit, name, fields) e = 1u << bit,
  VT_FOR_EACH_EVENT_FLAG(VT_EVENT_FLAG_ENUM)
#undef VT_EVENT_FLAG_ENUM
};

// ---- varint codec (LEB128) ----
inline constexpr size_t kMaxVarint = 10;

inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Reads one varint from [p, end). Returns nullptr when it is cut off or longer than 10 bytes.
inline const uint8_t* get_varint(const uint8_t* p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return p;
    }
  }
  return nullptr;
}

}  // namespace vt::format
