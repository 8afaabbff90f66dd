// Kernel activity read back: decoders for the CUPTI records (tags 0x8A..0x91:
// format/activity_records.h),
// ActivityIndex, which keeps every activity record of a trace (for the Perfetto export: kernels,
// copies, CUPTI's allocations and pools, NVTX ranges paired and nested per thread, the recorder's
// status), and the types the report's single pass (ActivityStream, activity_stream.h) answers in:
// phases, and the coverage cross-check (did interception see every allocation CUPTI saw?).
// Feed ActivityIndex every record of a trace (add() ignores the others), then call finish().
// Times are CLOCK_MONOTONIC ns like every t_ns of the trace.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "activity_format.h"
#include "activity_records.h"
#include "trace_reader.h"

namespace vt::analyzer {

// The records as the trace holds them (format/activity_records.h: fields, order, meanings).
using KernelActivity = format::KernelRecord;
using CopyActivity = format::CopyRecord;  // a memcpy (kTagMemcpy) or a memset (kTagMemset)
using CuptiAllocation = format::CuptiMemoryRecord;  // an allocation or release CUPTI saw (MEMORY2)
using PoolActivity = format::PoolRecord;
using NvtxMarker = format::NvtxRecordOf<std::string>;
struct CuptiStatus : format::CuptiStatusRecordOf<std::string> {
  uint64_t t_ns = 0;  // the record's time
};

// Decoders. `base_ns` is ProcessInfo::start_monotonic_ns (payload times are relative to it).
// Each returns false when `r` has another tag or a truncated payload.
bool decode_kernel(const Record& r, uint64_t base_ns, KernelActivity* out);
bool decode_copy(const Record& r, uint64_t base_ns, CopyActivity* out);  // memcpy or memset
bool decode_cupti_memory(const Record& r, uint64_t base_ns, CuptiAllocation* out);
bool decode_pool(const Record& r, uint64_t base_ns, PoolActivity* out);
bool decode_nvtx(const Record& r, uint64_t base_ns, NvtxMarker* out);
bool decode_status(const Record& r, CuptiStatus* out);
bool decode_kernel_name(const Record& r, uint32_t* id, std::string* name);

// Names for the numbers.
const char* memcpy_kind_name(uint32_t copy_kind);  // "HtoD", "DtoH", "DtoD", ...
const char* cupti_memory_kind_name(uint32_t kind);  // "device", "pinned", "managed", ...
const char* status_kind_name(uint8_t kind);         // "started", "unavailable", "stepped_aside", ...
const char* unavailable_reason_name(uint64_t code); // "disabled", "not_found", "other_client", ...
std::string demangle(const std::string& name);      // the name itself when it is not mangled

// Kernel names by id (kernel name records): the recorded (mangled) name, "" when unknown; and
// the name to show: demangled, or "kernel #id".
using KernelNames = std::unordered_map<uint32_t, std::string>;
const std::string& kernel_name_of(const KernelNames& names, uint32_t id);
std::string kernel_display_name(const KernelNames& names, uint32_t id);

// A paired NVTX range. Push/pop and start/end ranges both come as a start and an end marker
// with the same id; nesting is computed per thread from the intervals.
struct NvtxRange {
  std::string name, domain;
  uint64_t start_ns = 0, end_ns = 0;
  bool open = false;  // never ended in the trace (end_ns = the trace's end)
  uint32_t process = 0, thread = 0;  // CUPTI's ids (thread: pthread_self, truncated)
  uint32_t id = 0;
  int depth = 0;      // 0 = top level on its thread
};

// What the kernel recorder did in this process, from its status records.
struct RecorderState {
  bool seen = false;         // any status record (traces from before this feature have none)
  bool started = false;
  uint32_t version = 0;      // cuptiGetVersion
  uint32_t kinds = 0;        // format::kCuptiKind* bits
  std::string library;
  bool unavailable = false;
  uint64_t reason = 0;       // format::kCuptiWhy*
  std::string detail;
  bool stepped_aside = false;
  uint64_t stepped_aside_ns = 0;
  std::string stepped_aside_for;  // the entry point the other client called
  // Taken back after the other client let go (kCuptiResumed): each gap [from, to] without
  // kernel activity, CLOCK_MONOTONIC ns.
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  bool resumed = false;  // recording again after the last step aside
  uint64_t finalize = 0; // format::kCuptiFinalize* (0: none asked)
  uint64_t handover_dropped = 0;  // records in our buffers completed after a handover (not decoded)
  uint64_t lost_records = 0;      // dropped by CUPTI + unfinished at a forced flush
  uint64_t refused_buffers = 0;   // buffer requests the pool could not satisfy
  int64_t clock_offset_ns = 0;
  uint64_t clock_window_ns = 0;
  // What the recorder set up (kCuptiBuffers): CUPTI's device buffers per context at most (0: its
  // default, up to 250), their size, and whether activity buffers are per process or per thread.
  bool buffers_known = false;
  uint64_t device_buffers = 0, device_buffer_bytes = 0;
  std::string activity_buffers;
};

// Folds one status record into *state (records in trace order; the last of a kind wins).
void apply_status(const CuptiStatus& s, RecorderState* state);

class ActivityIndex {
 public:
  explicit ActivityIndex(uint64_t base_ns) : base_(base_ns) {}

  // Takes an activity record; returns false (and ignores it) for any other record.
  bool add(const Record& r) { return format::is_activity_tag(r.tag) && add_activity(r); }
  // Sorts and pairs. Ranges still open end at `trace_end_ns`. Call once, after the last add().
  void finish(uint64_t trace_end_ns);

  const std::vector<KernelActivity>& kernels() const { return kernels_; }  // by start
  const std::vector<CopyActivity>& copies() const { return copies_; }      // by start
  const std::vector<CuptiAllocation>& cupti_memory() const { return memory_; }  // by time
  const std::vector<PoolActivity>& pools() const { return pools_; }
  const std::vector<NvtxRange>& nvtx_ranges() const { return ranges_; }  // by thread, then start
  const std::vector<NvtxMarker>& nvtx_instants() const { return instants_; }
  const std::vector<CuptiStatus>& status() const { return status_; }
  RecorderState recorder() const;

  // The kernel name as recorded (mangled), "" when unknown; display_name demangles.
  const std::string& kernel_name(uint32_t id) const;
  std::string display_name(uint32_t id) const;

 private:
  bool add_activity(const Record& r);
  uint64_t base_;
  std::vector<KernelActivity> kernels_;
  std::vector<CopyActivity> copies_;
  std::vector<CuptiAllocation> memory_;
  std::vector<PoolActivity> pools_;
  std::vector<NvtxMarker> markers_;  // start and end markers until finish()
  std::vector<NvtxMarker> instants_;
  std::vector<NvtxRange> ranges_;
  std::vector<CuptiStatus> status_;
  KernelNames names_;
};

// ---- phases ----

// One point of a live-bytes timeline: `bytes` holds from t_ns until the next point.
struct BytesPoint {
  uint64_t t_ns = 0;
  uint64_t bytes = 0;
};

// Device memory per top-level NVTX range, grouped by range name: how often each ran and its
// highest peak (docs/metrics.md, "Regions, phases and kernels").
struct PhaseSummary {
  std::string name;
  size_t count = 0;
  uint64_t max_peak_bytes = 0;
  uint64_t max_growth_bytes = 0;  // largest peak - start_bytes over its instances
};
// The report's order of phases: highest peak first, then by name.
void sort_phases(std::vector<PhaseSummary>* phases);

// ---- coverage: did interception see what CUPTI saw? ----

struct InterceptedAllocation {
  uint64_t address = 0, size = 0, t_ns = 0;
  int32_t device = -1;
};

// A successful acquiring event with an address (device, pitch, managed, pinned host, async,
// host register, IPC import, VMM map): the intercepted side of the cross-check.
bool intercepted_allocation(const Record& r, InterceptedAllocation* out);

struct CoverageOptions {
  // A CUPTI allocation matches an intercepted one at the same address whose time is within this
  // much (the two are stamped on different sides of the driver call, through a clock offset).
  uint64_t max_skew_ns = 50'000'000;
};

struct CoverageResult {
  size_t cupti_allocations = 0;  // CUPTI allocation records (releases not counted)
  size_t matched = 0;
  size_t size_mismatches = 0;    // matched, but CUPTI's byte count differs
  double fraction = 1.0;         // matched / cupti_allocations (1 when CUPTI saw none)
  std::vector<CuptiAllocation> missed;  // CUPTI saw it, interception did not
};


}  // namespace vt::analyzer
