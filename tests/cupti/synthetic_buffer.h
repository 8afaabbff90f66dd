// Activity buffers built from CUPTI's own structs (CUDA 13 versions), laid out the way CUPTI
// lays them out (records back to back, 8-byte aligned), plus an iterator with
// cuptiActivityGetNextRecord's contract. Shared by the unit tests and the fake libcupti.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace synth {

inline size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    default: return 0;
  }
}

inline size_t align8(size_t n) { return (n + 7) & ~size_t(7); }

// Same contract as cuptiActivityGetNextRecord: *rec == nullptr starts at the beginning;
// CUPTI_ERROR_MAX_LIMIT_REACHED at the end; CUPTI_ERROR_INVALID_KIND for an unknown record.
inline CUptiResult next_record(uint8_t* buffer, size_t valid, CUpti_Activity** rec) {
  size_t off = 0;
  if (*rec) {
    uint8_t* cur = reinterpret_cast<uint8_t*>(*rec);
    off = size_t(cur - buffer) + align8(record_size((*rec)->kind));
  }
  if (off + sizeof(CUpti_Activity) > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  CUpti_Activity* r = reinterpret_cast<CUpti_Activity*>(buffer + off);
  size_t n = record_size(r->kind);
  if (n == 0) return CUPTI_ERROR_INVALID_KIND;
  if (off + n > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = r;
  return CUPTI_SUCCESS;
}

// Appends records to a caller-provided, 8-byte aligned buffer.
struct Builder {
  uint8_t* buf;
  size_t cap;
  size_t len = 0;

  template <typename T>
  T* add(CUpti_ActivityKind kind) {
    size_t n = align8(sizeof(T));
    if (len + n > cap) return nullptr;
    T* t = reinterpret_cast<T*>(buf + len);
    memset(t, 0, n);
    t->kind = kind;
    len += n;
    return t;
  }

  CUpti_ActivityKernel10* kernel(const char* name, uint64_t start, uint64_t end, uint32_t stream, uint32_t corr) {
    auto* k = add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (!k) return nullptr;
    k->name = name;
    k->start = start;
    k->end = end;
    k->deviceId = 0;
    k->contextId = 1;
    k->streamId = stream;
    k->correlationId = corr;
    k->gridX = 128;
    k->gridY = 2;
    k->gridZ = 1;
    k->blockX = 256;
    k->blockY = 1;
    k->blockZ = 1;
    k->registersPerThread = 32;
    k->staticSharedMemory = 1024;
    k->dynamicSharedMemory = 4096;
    return k;
  }
  CUpti_ActivityMemcpy6* memcpy_rec(uint8_t copy_kind, uint64_t bytes, uint64_t start, uint64_t end, uint32_t stream) {
    auto* m = add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (!m) return nullptr;
    m->copyKind = copy_kind;
    m->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->contextId = 1;
    m->streamId = stream;
    m->correlationId = 77;
    m->flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    return m;
  }
  CUpti_ActivityMemset4* memset_rec(uint32_t value, uint64_t bytes, uint64_t start, uint64_t end, uint32_t stream) {
    auto* m = add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
    if (!m) return nullptr;
    m->value = value;
    m->bytes = bytes;
    m->start = start;
    m->end = end;
    m->contextId = 1;
    m->streamId = stream;
    m->correlationId = 78;
    m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    return m;
  }
  CUpti_ActivityMemory4* memory(bool alloc, uint64_t address, uint64_t bytes, uint64_t t) {
    auto* m = add<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
    if (!m) return nullptr;
    m->memoryOperationType =
        alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->address = address;
    m->bytes = bytes;
    m->timestamp = t;
    m->contextId = 1;
    m->correlationId = 79;
    return m;
  }
  CUpti_ActivityMemoryPool3* pool(uint64_t address, uint64_t size, uint64_t t) {
    auto* p = add<CUpti_ActivityMemoryPool3>(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    if (!p) return nullptr;
    p->memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
    p->memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    p->address = address;
    p->size = size;
    p->releaseThreshold = 1 << 20;
    p->timestamp = t;
    return p;
  }
  CUpti_ActivityMarker2* marker(uint32_t flags, uint32_t id, uint64_t t, uint32_t thread, const char* name) {
    auto* m = add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
    if (!m) return nullptr;
    m->flags = CUpti_ActivityFlag(flags);
    m->id = id;
    m->timestamp = t;
    m->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m->objectId.pt.processId = 1234;
    m->objectId.pt.threadId = thread;
    m->name = name;
    m->domain = name ? "app" : nullptr;
    return m;
  }
};

}  // namespace synth
