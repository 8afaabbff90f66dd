// See activity_encoder.h.
#include "activity_encoder.h"

#include <cstring>

#include "activity_format.h"
#include "activity_records.h"

namespace vt::cupti {

namespace fmt = format;

// Every record is built as its typed struct and written by its schema (format/activity_records.h),
// so the field order exists once. Times are put on the monotonic clock here; the schema writes
// them relative to the trace's start.
struct Encoder::Payload {
  uint8_t data[fmt::kMaxKernelName + 256];
  size_t len = 0;
};

uint64_t Encoder::mono(uint64_t cupti_ts) const { return clock_->to_mono(cupti_ts); }

template <class Schema, class R>
void Encoder::emit(const R& rec) {
  Payload p;
  fmt::PayloadWriter w(p.data, sizeof p.data);
  fmt::encode<Schema>(w, rec, base_);
  sink_.write(sink_.ctx, Schema::kTag, w.data(), w.size());
  ++stats.written;
}

namespace {
fmt::Text text(const char* s, uint32_t max) { return s ? fmt::Text(s, strnlen(s, max)) : fmt::Text(); }
}  // namespace

uint32_t Encoder::name_id(const char* name) {
  bool is_new = false;
  uint32_t id = names_->intern(name, &is_new);
  if (is_new) emit<fmt::KernelNameSchema>(fmt::KernelNameRecord{id, text(name, fmt::kMaxKernelName)});
  return id;
}

void Encoder::kernel(const CUpti_ActivityKernel10& k) {
  if (k.start == 0 || k.end < k.start) {
    ++stats.incomplete;
    return;
  }
  fmt::KernelRecord r;
  r.name_id = name_id(k.name);  // before the kernel record: readers may stream
  r.device = k.deviceId;
  r.context = k.contextId;
  r.stream = k.streamId;
  r.correlation = k.correlationId;
  r.start_ns = mono(k.start);
  r.end_ns = r.start_ns + (k.end - k.start);
  r.grid[0] = uint32_t(k.gridX), r.grid[1] = uint32_t(k.gridY), r.grid[2] = uint32_t(k.gridZ);
  r.block[0] = uint32_t(k.blockX), r.block[1] = uint32_t(k.blockY), r.block[2] = uint32_t(k.blockZ);
  r.static_shared = uint32_t(k.staticSharedMemory);
  r.dynamic_shared = uint32_t(k.dynamicSharedMemory);
  r.registers = k.registersPerThread;
  r.graph_id = k.graphId;
  emit<fmt::KernelSchema>(r);
}

void Encoder::memcpy_rec(const CUpti_ActivityMemcpy6& m) {
  if (m.start == 0 || m.end < m.start) {
    ++stats.incomplete;
    return;
  }
  fmt::CopyRecord r;
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  r.bytes = m.bytes;
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  r.start_ns = mono(m.start);
  r.end_ns = r.start_ns + (m.end - m.start);
  r.flags = m.flags;
  r.graph_id = m.graphId;
  emit<fmt::MemcpySchema>(r);
}

void Encoder::memset_rec(const CUpti_ActivityMemset4& m) {
  if (m.start == 0 || m.end < m.start) {
    ++stats.incomplete;
    return;
  }
  fmt::CopyRecord r;
  r.is_memset = true;
  r.value = m.value;
  r.bytes = m.bytes;
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  r.start_ns = mono(m.start);
  r.end_ns = r.start_ns + (m.end - m.start);
  r.flags = m.flags;
  r.memory_kind = m.memoryKind;
  r.graph_id = m.graphId;
  emit<fmt::MemsetSchema>(r);
}

void Encoder::memory(const CUpti_ActivityMemory4& m) {
  fmt::CuptiMemoryRecord r;
  r.operation = uint32_t(m.memoryOperationType);
  r.memory_kind = uint32_t(m.memoryKind);
  r.address = m.address;
  r.bytes = m.bytes;
  r.t_ns = mono(m.timestamp);
  r.device = m.deviceId;
  r.context = m.contextId;
  r.stream = m.streamId;
  r.correlation = m.correlationId;
  r.is_async = m.isAsync;
  r.pool = m.memoryPoolConfig.address;
  r.pool_type = uint32_t(m.memoryPoolConfig.memoryPoolType);
  r.pc = m.PC;
  emit<fmt::CuptiMemorySchema>(r);
}

void Encoder::pool(const CUpti_ActivityMemoryPool3& m) {
  fmt::PoolRecord r;
  r.operation = uint32_t(m.memoryPoolOperationType);
  r.pool_type = uint32_t(m.memoryPoolType);
  r.device = m.deviceId;
  r.address = m.address;
  r.size = m.size;
  r.release_threshold = m.releaseThreshold;
  r.min_bytes_to_keep = m.minBytesToKeep;
  r.utilized = m.utilizedSize;
  r.t_ns = mono(m.timestamp);
  r.correlation = m.correlationId;
  emit<fmt::PoolSchema>(r);
}

void Encoder::marker(const CUpti_ActivityMarker2& m) {
  fmt::NvtxRecord r;
  r.flags = uint32_t(m.flags) & (fmt::kNvtxInstant | fmt::kNvtxStart | fmt::kNvtxEnd);
  r.id = m.id;
  r.t_ns = mono(m.timestamp);
  r.object_kind = uint32_t(m.objectKind);
  // THREAD: process and thread id (pthread_self truncated, CUPTI's default thread id type);
  // other object kinds: device and context.
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    r.object_a = m.objectId.pt.processId;
    r.object_b = m.objectId.pt.threadId;
  } else {
    r.object_a = m.objectId.dcs.deviceId;
    r.object_b = m.objectId.dcs.contextId;
  }
  r.name = text(m.name, fmt::kMaxNvtxText);
  r.domain = text(m.domain, fmt::kMaxNvtxText);
  emit<fmt::NvtxSchema>(r);
}

void Encoder::encode(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      memcpy_rec(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      memset_rec(*reinterpret_cast<const CUpti_ActivityMemset4*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      memory(*reinterpret_cast<const CUpti_ActivityMemory4*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
      pool(*reinterpret_cast<const CUpti_ActivityMemoryPool3*>(r));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      marker(*reinterpret_cast<const CUpti_ActivityMarker2*>(r));
      break;
    default:
      ++stats.ignored;
      break;
  }
}

void Encoder::decode_buffer(uint8_t* buffer, size_t valid, NextRecordFn next) {
  CUpti_Activity* rec = nullptr;
  // CUPTI_ERROR_MAX_LIMIT_REACHED ends a buffer; CUPTI_ERROR_INVALID_KIND an unusable one.
  while (valid && next(buffer, valid, &rec) == CUPTI_SUCCESS && rec) encode(rec);
}

}  // namespace vt::cupti
