// Reading a trace file back: validation of the header, the process and device records, and all
// records of all chunks merged into one time-ordered stream. Memory is bounded by the number of
// chunks, not of events; nothing is allocated per event. Damage (a file cut short, a corrupt
// chunk, a newer minor version) is reported in problems() (and what lost records in damage()),
// never by crashing; what is intact is returned. The file is opened without blocking and only
// when it is a regular file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "op_table.h"
#include "record_registry.h"
#include "stack_frames.h"
#include "trace_format.h"

namespace vt::analyzer {

struct DeviceInfo {
  int ordinal = 0;
  uint64_t total_bytes = 0;
  std::string name;
  std::string uuid;  // hex, empty when unknown
};

struct ProcessInfo {
  uint32_t version_major = 0, version_minor = 0;
  uint64_t pid = 0, ppid = 0;
  uint64_t start_realtime_ns = 0, start_monotonic_ns = 0, end_monotonic_ns = 0;
  // The process reached its exit path and the trace holds everything up to it: the header's
  // flag is set, the file is as long as the header says, and the end record was read. Final once
  // next() has returned nullptr (or after load_stacks(), which reads every record's tag).
  bool closed_cleanly = false;
  bool quick_exit = false;  // closed by _exit/_Exit(exit_status): no exit handlers ran (with closed_cleanly)
  int exit_status = 0;
  bool tracing_failed = false;  // the writer stopped early (disk full, size limit, file lost)
  uint64_t events_lost = 0;     // events the recorder counted but could not record (signal handlers)
  int rank = -1, local_rank = -1;
  std::string session, hostname, exe;
  std::vector<std::string> argv;
  int driver_version = 0;
  std::vector<DeviceInfo> devices;
};

struct ModuleInfo {
  uint64_t bias = 0, lo = 0, hi = 0;  // load bias and the mapped range [lo, hi)
  std::string path;
  std::string build_id;  // hex, empty when the object has none
  uint64_t t_ns = 0;     // when it was recorded
};

struct PyCodeInfo {
  int py_minor = 0;
  int first_line = 0;
  std::string file, qualname;
  std::string linetable;  // raw co_linetable bytes (format depends on py_minor)
};

struct ThreadInfo {
  std::string name;
  bool python = false;  // had a Python thread state
};

// Everything needed to turn stack ids into frames: stacks, modules, Python code objects, threads.
struct StackStore {
  StackFrames stacks;  // id -> frames, innermost first (stack_frames.h: one arena, no node per stack)
  std::vector<ModuleInfo> modules;
  std::unordered_set<std::string> module_keys;  // lo, hi and path of each module, to skip repeats
  std::unordered_map<uint32_t, PyCodeInfo> code;
  std::unordered_map<uint32_t, ThreadInfo> threads;
  // Stack delta records read before their base (only out-of-order or damaged files), decoded
  // by resolve_stack_deltas once every record was seen; at most kMaxPendingDeltas.
  std::vector<std::string> pending_deltas;
  std::vector<uint64_t> rebuilt;  // the decoder's buffer for a stack delta's whole frames
  int stack_depth = -1;  // from the config record; -1 when absent
  int python_status = 0;
  std::string python_message;
};

// One decoded record. For events, `op` is set (nullptr for op codes newer than this reader);
// for metadata, `payload` points into the mapped file.
struct Record {
  uint8_t tag = 0;
  const OpInfo* op = nullptr;
  uint64_t t_ns = 0;
  uint32_t tid = 0;
  // Event fields (valid when is_event()).
  uint8_t fields = 0;  // format::EventFlag bits present
  int32_t result = 0;
  uint64_t context = 0;
  int32_t device = -1;
  uint64_t stream = 0;  // for MemKind::Async ops
  uint64_t addr = 0, size = 0, aux = 0, aux2 = 0;
  uint64_t free_bytes = 0, total_bytes = 0;
  uint32_t stack = 0;  // stack id, 0 = none
  // Metadata payload (after dt).
  const uint8_t* payload = nullptr;
  size_t payload_len = 0;

  bool is_event() const { return tag >= 1 && tag < 0x80; }
  bool has(format::EventFlag f) const { return fields & f; }
};

class TraceReader {
 public:
  // Opens and validates `path`. On failure returns nullptr with one line in *error.
  static std::unique_ptr<TraceReader> open(const std::string& path, std::string* error);
  ~TraceReader();

  const ProcessInfo& process() const { return process_; }

  // Stacks, modules, code objects and threads. Records arrive in time order, and a stack can be
  // referenced (by another thread) moments before its record: call load_stacks() first to read
  // them all up front (a skip-scan of the file).
  const StackStore& stacks() const { return store_; }
  void load_stacks();
  // The stacks moved out, the reader left without them: what a job's trace keeps between its
  // replay and its symbolization (analysis.h, ReplayedTrace).
  StackStore take_stacks() { return std::move(store_); }
  const std::string& path() const { return path_; }

  // The next record in time order; nullptr at the end. It stays valid until the next call.
  const Record* next();
  // The same, copied into *out; false at the end.
  bool next(Record* out) {
    const Record* r = next();
    if (r) *out = *r;
    return r != nullptr;
  }

  // Everything that was damaged or missing, one sentence each (empty for a perfect trace).
  // Complete only after next() has returned false.
  const std::vector<std::string>& problems() const { return problems_; }
  // The problems that mean records were lost (a cut, a corrupt chunk, tracing that stopped):
  // figures from this trace are lower bounds. A clean close that is merely missing (the process
  // was killed) is a problem but no damage.
  const std::vector<std::string>& damage() const { return damage_; }
  bool data_lost() const { return !damage_.empty(); }

  uint64_t file_size() const { return size_; }
  // Bytes of claimed chunks actually holding records (chunk headers + published records).
  uint64_t record_bytes() const { return record_bytes_; }

 private:
  struct Cursor;
  TraceReader() = default;
  // load() runs these in order (trace_reader.cpp says what each does).
  bool load(std::string* error);
  bool open_checked(format::FileHeader* header, std::string* error);
  bool map_file(const format::FileHeader& h, std::string* error);
  void read_header_process(const format::FileHeader& h);
  bool find_chunks(const format::FileHeader& h);
  void read_first_chunk_meta();
  void order_chunks();
  bool advance(Cursor& c);  // decodes the cursor's next record into c.rec
  // advance's rare event fields, out of line.
  static void decode_leading(Cursor& c, uint8_t flags, format::PayloadReader& b);
  static void decode_aux(Record& r, uint8_t flags, format::PayloadReader& b);
  void release(const uint8_t* chunk_lo, const uint8_t* chunk_hi);  // drops a read chunk's pages
  void flush_released();  // the pages release() has gathered
  const uint8_t* released_lo_ = nullptr;  // adjacent read chunks not yet dropped
  const uint8_t* released_hi_ = nullptr;
  void apply_meta(const Record& r);
  void note(std::string msg, bool lost);
  void note_in_chunk(uint32_t chunk, const char* before, const char* after);  // lost records
  void finish();  // at the end of the stream: was the clean close really there?

  std::string path_;
  int fd_ = -1;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t record_bytes_ = 0;
  ProcessInfo process_;
  StackStore store_;
  bool stacks_loaded_ = false;
  std::vector<Cursor> cursors_;
  std::vector<uint32_t> pending_;  // cursor indices not yet in the heap, by descending base time
  uint64_t next_pending_ns_ = ~0ull;  // base time of pending_.back(); ~0 when none
  struct HeapEntry {
    uint64_t t;       // the cursor's next record time
    uint32_t index;   // its chunk index: ties go to the earlier chunk
    Cursor* cursor;   // (cursors_ never grows once the stream is read)
  };
  std::vector<HeapEntry> heap_;  // min-heap of active cursors by next record time
  std::vector<std::string> problems_, damage_;
  std::unordered_set<std::string> noted_;  // problems_ without repeats
  bool end_seen_ = false;  // the end record (kTagEnd) was read
  bool finished_ = false;
  Cursor* current_ = nullptr;  // the cursor whose record was returned last, not in the heap
  uint64_t limit_ns_ = 0;      // its records before this time come next (see take())
  const Record* take(Cursor& c);
  const Record* emit(Cursor& c);
  // The heap's earliest entry's cursor; `e` takes its place.
  template <typename Later>
  Cursor* replace_earliest(const HeapEntry& e, Later later);
  bool quiet_ = false;
};

// Typed records for the payloads the analysis reads (the others: ProcessInfo, DeviceInfo and
// StackStore above; kernel activity: activity.h).

// A region mark (kTagRegion), from vramtrace_region_begin / vramtrace_region_end.
struct RegionMark {
  bool begin = false;  // else an end
  std::string name;
};
// False when the payload is cut short or the kind is one this reader does not know.
// A recorder's note (kTagNote): its text.
bool decode_note(const Record& r, std::string* text);
bool decode_region(const Record& r, RegionMark* out);

// A process on a device, as NVML listed it right after a failed allocation, or as the recorder's
// sampler did once the device had a context and whenever the other processes' memory changed.
struct GpuProcess {
  uint64_t pid = 0;
  std::string name;
  uint64_t bytes = 0;
};
struct GpuProcessList {  // kTagGpuProcesses
  int device = -1;
  std::vector<GpuProcess> processes;  // at most kMaxGpuProcesses
};
inline constexpr uint64_t kMaxGpuProcesses = 1024;
// NVML's usedGpuMemory when it cannot say (NVML_VALUE_NOT_AVAILABLE).
inline constexpr uint64_t kNvmlNotAvailable = ~0ull;
// False when the payload is damaged (nothing of it is kept).
bool decode_gpu_processes(const Record& r, GpuProcessList* out);
// What the list's processes other than `own_pid` hold (rows NVML could not size count 0).
inline uint64_t other_processes_bytes(const GpuProcessList& list, uint64_t own_pid) {
  uint64_t bytes = 0;
  for (const GpuProcess& g : list.processes)
    if (g.pid != own_pid && g.bytes != kNvmlNotAvailable) bytes += g.bytes;
  return bytes;
}

// Decoders for metadata payloads (exposed for tests).
bool decode_process_payload(const uint8_t* p, size_t n, ProcessInfo* out);
// /proc/self/cmdline's NUL-separated arguments (the process record's argv field).
std::vector<std::string> split_argv(std::string_view cmdline);
bool decode_device_payload(const uint8_t* p, size_t n, DeviceInfo* out);

// The pools of a device right after a failed allocation (kTagPoolUsage).
struct PoolUsage {
  uint64_t pool = 0, location = 0, reserved = 0, used = 0;
};
struct PoolUsageList {
  int device = -1;
  std::vector<PoolUsage> pools;  // at most format::kMaxPoolUsageRows
};
// False when the payload is damaged (nothing of it is kept).
bool decode_pool_usage(const Record& r, PoolUsageList* out);
// A kTagPoolSync record: the device of the synchronize (format/accounting.h, rule 15).
bool decode_pool_sync(const Record& r, int* device);
// Applies a stack, module, code, thread or config record to *store.
bool decode_stack_meta(const Record& r, StackStore* store);
// Decodes the pending stack deltas whose base has arrived; false when some never found theirs.
bool resolve_stack_deltas(StackStore* store);
inline constexpr size_t kMaxPendingDeltas = 1u << 16;
// The records decode_stack_meta reads: those the record registry routes to the stack store.
inline bool is_stack_meta(uint8_t tag) { return format::kReadBy[tag] == format::ReadBy::Stacks; }

}  // namespace vt::analyzer
