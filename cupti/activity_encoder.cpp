// See activity_encoder.h. Field order per tag: cupti/FORMAT.md.
#include "activity_encoder.h"

#include <cstring>

#include "activity_format.h"
#include "trace_format.h"

namespace vt::cupti {

namespace fmt = format;

struct Encoder::Payload {
  uint8_t data[fmt::kMaxKernelName + 256];
  size_t len = 0;
  void v(uint64_t x) { len = size_t(fmt::put_varint(data + len, x) - data); }
  void z(int64_t x) { v(fmt::zigzag(x)); }
  void s(const char* p, uint32_t max) {
    size_t n = p ? strnlen(p, max) : 0;
    v(n);
    if (n) memcpy(data + len, p, n);
    len += n;
  }
};

uint64_t Encoder::zz_time(uint64_t cupti_ts) const {
  return fmt::zigzag(int64_t(clock_->to_mono(cupti_ts)) - int64_t(base_));
}

void Encoder::emit(uint8_t tag, const Payload& p) {
  sink_.write(sink_.ctx, tag, p.data, p.len);
  ++stats.written;
}

uint32_t Encoder::name_id(const char* name) {
  bool is_new = false;
  uint32_t id = names_->intern(name, &is_new);
  if (is_new) {
    Payload p;
    p.v(id);
    p.s(name, fmt::kMaxKernelName);
    emit(fmt::kTagKernelName, p);
  }
  return id;
}

void Encoder::kernel(const CUpti_ActivityKernel10& k) {
  if (k.start == 0 || k.end < k.start) {
    ++stats.incomplete;
    return;
  }
  uint32_t id = name_id(k.name);  // before the kernel record: readers may stream
  Payload p;
  p.v(id);
  p.v(k.deviceId);
  p.v(k.contextId);
  p.v(k.streamId);
  p.v(k.correlationId);
  p.v(zz_time(k.start));
  p.v(k.end - k.start);
  p.v(uint32_t(k.gridX));
  p.v(uint32_t(k.gridY));
  p.v(uint32_t(k.gridZ));
  p.v(uint32_t(k.blockX));
  p.v(uint32_t(k.blockY));
  p.v(uint32_t(k.blockZ));
  p.v(uint32_t(k.staticSharedMemory));
  p.v(uint32_t(k.dynamicSharedMemory));
  p.v(k.registersPerThread);
  p.v(k.graphId);
  emit(fmt::kTagKernel, p);
}

void Encoder::memcpy_rec(const CUpti_ActivityMemcpy6& m) {
  if (m.start == 0 || m.end < m.start) {
    ++stats.incomplete;
    return;
  }
  Payload p;
  p.v(m.copyKind);
  p.v(m.srcKind);
  p.v(m.dstKind);
  p.v(m.bytes);
  p.v(m.deviceId);
  p.v(m.contextId);
  p.v(m.streamId);
  p.v(m.correlationId);
  p.v(zz_time(m.start));
  p.v(m.end - m.start);
  p.v(m.flags);
  p.v(m.graphId);
  emit(fmt::kTagMemcpy, p);
}

void Encoder::memset_rec(const CUpti_ActivityMemset4& m) {
  if (m.start == 0 || m.end < m.start) {
    ++stats.incomplete;
    return;
  }
  Payload p;
  p.v(m.value);
  p.v(m.bytes);
  p.v(m.deviceId);
  p.v(m.contextId);
  p.v(m.streamId);
  p.v(m.correlationId);
  p.v(zz_time(m.start));
  p.v(m.end - m.start);
  p.v(m.flags);
  p.v(m.memoryKind);
  p.v(m.graphId);
  emit(fmt::kTagMemset, p);
}

void Encoder::memory(const CUpti_ActivityMemory4& m) {
  Payload p;
  p.v(uint32_t(m.memoryOperationType));
  p.v(uint32_t(m.memoryKind));
  p.v(m.address);
  p.v(m.bytes);
  p.v(zz_time(m.timestamp));
  p.v(m.deviceId);
  p.v(m.contextId);
  p.v(m.streamId);
  p.v(m.correlationId);
  p.v(m.isAsync);
  p.v(m.memoryPoolConfig.address);
  p.v(uint32_t(m.memoryPoolConfig.memoryPoolType));
  p.v(m.PC);
  emit(fmt::kTagCuptiMemory, p);
}

void Encoder::pool(const CUpti_ActivityMemoryPool3& m) {
  Payload p;
  p.v(uint32_t(m.memoryPoolOperationType));
  p.v(uint32_t(m.memoryPoolType));
  p.v(m.deviceId);
  p.v(m.address);
  p.v(m.size);
  p.v(m.releaseThreshold);
  p.v(m.minBytesToKeep);
  p.v(m.utilizedSize);
  p.v(zz_time(m.timestamp));
  p.v(m.correlationId);
  emit(fmt::kTagMemoryPool, p);
}

void Encoder::marker(const CUpti_ActivityMarker2& m) {
  Payload p;
  p.v(uint32_t(m.flags) & (fmt::kNvtxInstant | fmt::kNvtxStart | fmt::kNvtxEnd));
  p.v(m.id);
  p.v(zz_time(m.timestamp));
  p.v(uint32_t(m.objectKind));
  // THREAD: process and thread id (pthread_self truncated, CUPTI's default thread id type);
  // other object kinds: device and context.
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    p.v(m.objectId.pt.processId);
    p.v(m.objectId.pt.threadId);
  } else {
    p.v(m.objectId.dcs.deviceId);
    p.v(m.objectId.dcs.contextId);
  }
  p.s(m.name, fmt::kMaxNvtxText);
  p.s(m.domain, fmt::kMaxNvtxText);
  emit(fmt::kTagNvtx, p);
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
