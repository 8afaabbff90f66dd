// See activity.h. Payload layouts: cupti/FORMAT.md (source of truth cupti/activity_encoder.cpp).
#include "activity.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "accounting.h"
#include "activity_format.h"
#include "trace_format.h"

namespace vt::analyzer {

namespace fmt = vt::format;

namespace {

// Sequential reads from a payload; any overrun makes ok() false. Fields appended by a newer
// writer are simply not read.
struct In {
  const uint8_t* p;
  const uint8_t* end;
  bool good = true;
  In(const Record& r) : p(r.payload), end(r.payload + r.payload_len) {}
  uint64_t v() {
    uint64_t x = 0;
    const uint8_t* q = good ? fmt::get_varint(p, end, &x) : nullptr;
    if (!q) {
      good = false;
      return 0;
    }
    p = q;
    return x;
  }
  uint32_t u() { return uint32_t(v()); }
  int64_t z() { return fmt::unzigzag(v()); }
  uint64_t t(uint64_t base) { return uint64_t(int64_t(base) + z()); }
  std::string s() {
    uint64_t n = v();
    if (!good || n > uint64_t(end - p)) {
      good = false;
      return {};
    }
    std::string out(reinterpret_cast<const char*>(p), size_t(n));
    p += n;
    return out;
  }
};

}  // namespace

bool decode_kernel(const Record& r, uint64_t base, KernelActivity* k) {
  if (r.tag != fmt::kTagKernel || !r.payload) return false;
  In in(r);
  k->name_id = in.u();
  k->device = in.u();
  k->context = in.u();
  k->stream = in.u();
  k->correlation = in.u();
  k->start_ns = in.t(base);
  k->end_ns = k->start_ns + in.v();
  for (uint32_t& g : k->grid) g = in.u();
  for (uint32_t& b : k->block) b = in.u();
  k->static_shared = in.u();
  k->dynamic_shared = in.u();
  k->registers = in.u();
  k->graph_id = in.u();
  return in.good;
}

bool decode_copy(const Record& r, uint64_t base, CopyActivity* c) {
  if ((r.tag != fmt::kTagMemcpy && r.tag != fmt::kTagMemset) || !r.payload) return false;
  In in(r);
  *c = CopyActivity{};
  if (r.tag == fmt::kTagMemcpy) {
    c->copy_kind = in.u();
    c->src_kind = in.u();
    c->dst_kind = in.u();
  } else {
    c->is_memset = true;
    c->value = in.u();
  }
  c->bytes = in.v();
  c->device = in.u();
  c->context = in.u();
  c->stream = in.u();
  c->correlation = in.u();
  c->start_ns = in.t(base);
  c->end_ns = c->start_ns + in.v();
  c->flags = in.u();
  if (c->is_memset) c->memory_kind = in.u();
  c->graph_id = in.u();
  return in.good;
}

bool decode_cupti_memory(const Record& r, uint64_t base, CuptiAllocation* m) {
  if (r.tag != fmt::kTagCuptiMemory || !r.payload) return false;
  In in(r);
  m->release = in.u() == 2;  // CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
  m->memory_kind = in.u();
  m->address = in.v();
  m->bytes = in.v();
  m->t_ns = in.t(base);
  m->device = in.u();
  m->context = in.u();
  m->stream = in.u();
  m->correlation = in.u();
  m->is_async = in.v() != 0;
  m->pool = in.v();
  m->pool_type = in.u();
  m->pc = in.v();
  return in.good;
}

bool decode_pool(const Record& r, uint64_t base, PoolActivity* p) {
  if (r.tag != fmt::kTagMemoryPool || !r.payload) return false;
  In in(r);
  p->operation = in.u();
  p->pool_type = in.u();
  p->device = in.u();
  p->address = in.v();
  p->size = in.v();
  p->release_threshold = in.v();
  p->min_bytes_to_keep = in.v();
  p->utilized = in.v();
  p->t_ns = in.t(base);
  p->correlation = in.u();
  return in.good;
}

bool decode_nvtx(const Record& r, uint64_t base, NvtxMarker* m) {
  if (r.tag != fmt::kTagNvtx || !r.payload) return false;
  In in(r);
  m->flags = in.u();
  m->id = in.u();
  m->t_ns = in.t(base);
  m->object_kind = in.u();
  m->object_a = in.u();
  m->object_b = in.u();
  m->name = in.s();
  m->domain = in.s();
  return in.good;
}

bool decode_status(const Record& r, CuptiStatus* s) {
  if (r.tag != fmt::kTagCuptiStatus || !r.payload) return false;
  In in(r);
  s->t_ns = r.t_ns;
  s->kind = uint8_t(in.v());
  s->code = in.v();
  s->value = in.z();
  s->text = in.s();
  return in.good;
}

bool decode_kernel_name(const Record& r, uint32_t* id, std::string* name) {
  if (r.tag != fmt::kTagKernelName || !r.payload) return false;
  In in(r);
  *id = in.u();
  *name = in.s();
  return in.good;
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
      s.stepped_aside = true;
      s.stepped_aside_ns = st.value > 0 ? uint64_t(st.value) : st.t_ns;
      s.stepped_aside_for = st.text;
      break;
    case fmt::kCuptiClock:
      s.clock_offset_ns = st.value;
      s.clock_window_ns = st.code;
      break;
    case fmt::kCuptiDropped:
      (st.code == fmt::kCuptiLostNoBuffer ? s.refused_buffers : s.lost_records) += st.value > 0 ? uint64_t(st.value) : 0;
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
