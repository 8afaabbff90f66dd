// See activity.h. The records and their field order: format/activity_records.h.
#include "activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "accounting.h"
#include "activity_format.h"
#include "activity_records.h"

namespace vt::analyzer {

namespace fmt = vt::format;

bool decode_kernel(const Record& r, uint64_t base, KernelActivity* k) {
  return r.tag == fmt::kTagKernel && r.payload && fmt::decode<fmt::KernelSchema>(r.payload, r.payload_len, k, base);
}

bool decode_copy(const Record& r, uint64_t base, CopyActivity* c) {
  if (!r.payload) return false;
  *c = CopyActivity{};
  c->is_memset = r.tag == fmt::kTagMemset;
  if (r.tag == fmt::kTagMemcpy) return fmt::decode<fmt::MemcpySchema>(r.payload, r.payload_len, c, base);
  return r.tag == fmt::kTagMemset && fmt::decode<fmt::MemsetSchema>(r.payload, r.payload_len, c, base);
}

bool decode_cupti_memory(const Record& r, uint64_t base, CuptiAllocation* m) {
  return r.tag == fmt::kTagCuptiMemory && r.payload &&
         fmt::decode<fmt::CuptiMemorySchema>(r.payload, r.payload_len, m, base);
}

bool decode_pool(const Record& r, uint64_t base, PoolActivity* p) {
  return r.tag == fmt::kTagMemoryPool && r.payload && fmt::decode<fmt::PoolSchema>(r.payload, r.payload_len, p, base);
}

bool decode_nvtx(const Record& r, uint64_t base, NvtxMarker* m) {
  return r.tag == fmt::kTagNvtx && r.payload && fmt::decode<fmt::NvtxSchema>(r.payload, r.payload_len, m, base);
}

bool decode_status(const Record& r, CuptiStatus* s) {
  if (r.tag != fmt::kTagCuptiStatus || !r.payload) return false;
  s->t_ns = r.t_ns;
  return fmt::decode<fmt::CuptiStatusSchema>(r.payload, r.payload_len, s);
}

bool decode_kernel_name(const Record& r, uint32_t* id, std::string* name) {
  fmt::KernelNameRecord n;
  if (r.tag != fmt::kTagKernelName || !r.payload || !fmt::decode<fmt::KernelNameSchema>(r.payload, r.payload_len, &n))
    return false;
  *id = n.id;
  *name = std::string(n.name);
  return true;
}

const char* memcpy_kind_name(uint32_t k) {
  static const char* const kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof kNames / sizeof kNames[0] ? kNames[k] : "unknown";
}

const char* cupti_memory_kind_name(uint32_t k) {
  static const char* const kNames[] = {"unknown", "pageable", "pinned", "device", "array", "managed", "device_static", "managed_static"};
  return k < sizeof kNames / sizeof kNames[0] ? kNames[k] : "unknown";
}

const char* status_kind_name(uint8_t k) {
  switch (k) {
    case fmt::kCuptiStarted: return "started";
    case fmt::kCuptiUnavailable: return "unavailable";
    case fmt::kCuptiSteppedAside: return "stepped_aside";
    case fmt::kCuptiClock: return "clock";
    case fmt::kCuptiDropped: return "lost_records";
    case fmt::kCuptiStopped: return "stopped";
    case fmt::kCuptiBuffers: return "buffers";
    case fmt::kCuptiResumed: return "resumed";
    case fmt::kCuptiFinalize: return "finalize";
    default: return "unknown";
  }
}

const char* unavailable_reason_name(uint64_t c) {
  switch (c) {
    case fmt::kCuptiWhyDisabled: return "disabled";
    case fmt::kCuptiWhyNotFound: return "not_found";
    case fmt::kCuptiWhyMissingSymbol: return "missing_symbol";
    case fmt::kCuptiWhyOtherTool: return "other_tool";
    case fmt::kCuptiWhyOtherClient: return "other_client";
    case fmt::kCuptiWhyError: return "cupti_error";
    case fmt::kCuptiWhyForked: return "forked_child";
    case fmt::kCuptiWhyNoKinds: return "no_activity_kinds";
    default: return "unknown";
  }
}

std::string demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? std::string(d) : name;
  free(d);
  return out;
}

// ---- ActivityIndex ----

bool ActivityIndex::add_activity(const Record& r) {
  switch (r.tag) {
    case fmt::kTagKernel: {
      KernelActivity k;
      if (decode_kernel(r, base_, &k)) kernels_.push_back(k);
      break;
    }
    case fmt::kTagMemcpy:
    case fmt::kTagMemset: {
      CopyActivity c;
      if (decode_copy(r, base_, &c)) copies_.push_back(c);
      break;
    }
    case fmt::kTagCuptiMemory: {
      CuptiAllocation m;
      if (decode_cupti_memory(r, base_, &m)) memory_.push_back(m);
      break;
    }
    case fmt::kTagMemoryPool: {
      PoolActivity p;
      if (decode_pool(r, base_, &p)) pools_.push_back(p);
      break;
    }
    case fmt::kTagNvtx: {
      NvtxMarker m;
      if (decode_nvtx(r, base_, &m)) (m.flags & (fmt::kNvtxStart | fmt::kNvtxEnd) ? markers_ : instants_).push_back(std::move(m));
      break;
    }
    case fmt::kTagCuptiStatus: {
      CuptiStatus s;
      if (decode_status(r, &s)) status_.push_back(std::move(s));
      break;
    }
    case fmt::kTagKernelName: {
      uint32_t id = 0;
      std::string name;
      if (decode_kernel_name(r, &id, &name)) names_[id] = std::move(name);
      break;
    }
  }
  return true;
}

void ActivityIndex::finish(uint64_t trace_end_ns) {
  std::sort(kernels_.begin(), kernels_.end(),
            [](const KernelActivity& a, const KernelActivity& b) { return a.start_ns < b.start_ns; });
  std::sort(copies_.begin(), copies_.end(), [](const CopyActivity& a, const CopyActivity& b) { return a.start_ns < b.start_ns; });
  std::sort(memory_.begin(), memory_.end(), [](const CuptiAllocation& a, const CuptiAllocation& b) { return a.t_ns < b.t_ns; });

  // Pair starts with ends by id (CUPTI's marker ids are unique per range within the process).
  std::stable_sort(markers_.begin(), markers_.end(), [](const NvtxMarker& a, const NvtxMarker& b) { return a.t_ns < b.t_ns; });
  std::unordered_map<uint32_t, size_t> open;  // id -> index in ranges_
  ranges_.clear();
  for (const NvtxMarker& mk : markers_) {
    if (mk.flags & fmt::kNvtxStart) {
      NvtxRange r;
      r.name = mk.name;
      r.domain = mk.domain;
      r.start_ns = mk.t_ns;
      r.end_ns = trace_end_ns > mk.t_ns ? trace_end_ns : mk.t_ns;
      r.open = true;
      r.process = mk.object_a;
      r.thread = mk.object_b;
      r.id = mk.id;
      open[mk.id] = ranges_.size();
      ranges_.push_back(std::move(r));
    } else if (auto it = open.find(mk.id); it != open.end()) {
      ranges_[it->second].end_ns = mk.t_ns;
      ranges_[it->second].open = false;
      open.erase(it);
    }
  }
  markers_.clear();
  markers_.shrink_to_fit();
  // Depth per thread: outer ranges first at equal starts; a range is inside every range still
  // open on its thread when it starts.
  std::sort(ranges_.begin(), ranges_.end(), [](const NvtxRange& a, const NvtxRange& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.end_ns > b.end_ns;
  });
  std::vector<uint64_t> stack;  // end times of the enclosing ranges
  for (size_t i = 0; i < ranges_.size(); ++i) {
    if (i == 0 || ranges_[i].thread != ranges_[i - 1].thread) stack.clear();
    while (!stack.empty() && stack.back() <= ranges_[i].start_ns) stack.pop_back();
    ranges_[i].depth = int(stack.size());
    stack.push_back(ranges_[i].end_ns);
  }
}

void apply_status(const CuptiStatus& st, RecorderState* state) {
  RecorderState& s = *state;
  s.seen = true;
  switch (st.kind) {
    case fmt::kCuptiStarted:
      s.started = true;
      s.version = uint32_t(st.code);
      s.kinds = uint32_t(st.value);
      s.library = st.text;
      break;
    case fmt::kCuptiUnavailable:
      s.unavailable = true;
      s.reason = st.code;
      s.detail = st.text;
      break;
    case fmt::kCuptiSteppedAside:
      s.resumed = false;
      s.stepped_aside = true;
      s.stepped_aside_ns = st.value > 0 ? uint64_t(st.value) : st.t_ns;
      s.stepped_aside_for = st.text;
      break;
    case fmt::kCuptiClock:
      s.clock_offset_ns = st.value;
      s.clock_window_ns = st.code;
      break;
    case fmt::kCuptiDropped:
      (st.code == fmt::kCuptiLostNoBuffer   ? s.refused_buffers
       : st.code == fmt::kCuptiLostHandover ? s.handover_dropped
                                            : s.lost_records) += st.value > 0 ? uint64_t(st.value) : 0;
      break;
    case fmt::kCuptiResumed:
      s.resumed = true;
      s.gaps.push_back({st.value > 0 ? uint64_t(st.value) : s.stepped_aside_ns, st.t_ns});
      break;
    case fmt::kCuptiFinalize:
      s.finalize = st.code;
      break;
    case fmt::kCuptiBuffers:
      s.buffers_known = true;
      s.device_buffers = st.code;
      s.device_buffer_bytes = st.value > 0 ? uint64_t(st.value) : 0;
      s.activity_buffers = st.text;
      break;
  }
}

RecorderState ActivityIndex::recorder() const {
  RecorderState s;
  for (const CuptiStatus& st : status_) apply_status(st, &s);
  return s;
}

const std::string& kernel_name_of(const KernelNames& names, uint32_t id) {
  static const std::string kEmpty;
  auto it = names.find(id);
  return it == names.end() ? kEmpty : it->second;
}

std::string kernel_display_name(const KernelNames& names, uint32_t id) {
  const std::string& n = kernel_name_of(names, id);
  return n.empty() ? "kernel #" + std::to_string(id) : demangle(n);
}

const std::string& ActivityIndex::kernel_name(uint32_t id) const { return kernel_name_of(names_, id); }
std::string ActivityIndex::display_name(uint32_t id) const { return kernel_display_name(names_, id); }

void sort_phases(std::vector<PhaseSummary>* phases) {
  std::sort(phases->begin(), phases->end(), [](const PhaseSummary& a, const PhaseSummary& b) {
    return a.max_peak_bytes != b.max_peak_bytes ? a.max_peak_bytes > b.max_peak_bytes : a.name < b.name;
  });
}

// ---- coverage ----

bool intercepted_allocation(const Record& r, InterceptedAllocation* out) {
  if (!r.is_event() || !r.op || !changes_memory(r.result) || r.op->action != Action::Acquire) return false;
  if (!r.has(fmt::kEvAddr) || !r.has(fmt::kEvSize)) return false;
  switch (r.op->kind) {
    case MemKind::Device:
    case MemKind::Managed:
    case MemKind::PinnedHost:
    case MemKind::RegisteredHost:
    case MemKind::Async:
    case MemKind::VmmMapping:
    case MemKind::IpcImport:
      break;
    default:
      return false;
  }
  out->address = r.addr;
  out->size = r.size;
  out->t_ns = r.t_ns;
  out->device = r.device;
  return true;
}

}  // namespace vt::analyzer
