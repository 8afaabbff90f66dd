// What each hooked function means for memory: one small overload per driver function fills the
// Event's address, size and op-specific fields from the call's arguments and result. The hook
// body that calls these is generic (hooks.cpp); this is the only per-function and per-kind code:
// describe() and prepare() (the event), observe() (after every real call, recorded or not: graph
// capture state), follow_any_call() and follow_recorded_call() (the state that follows an op's
// kind: contexts torn down, rule 15's pool bookkeeping). A describe() may drop its event (a graph
// op that changed nothing).
// Which fields each op fills, and what they hold, is the `fields` column of format/op_table.h
// (the reader and docs/trace-format.md take it from there); each overload sets exactly those.
#pragma once

#include "accounting.h"
#include "code_costs.h"
#include "cuda_decls.h"
#include "driver_api.h"
#include "event.h"
#include "graph_state.h"
#include "pool_sync.h"

namespace vt {

template <HookId>
struct Op {};

inline bool ok(CUresult r) { return r == CUDA_SUCCESS; }
inline uint64_t u(const void* p) { return reinterpret_cast<uint64_t>(p); }
// The accounting rules (format/accounting.h) read these type values back.
inline uint64_t location(const CUmemLocation& l) { return uint64_t(uint32_t(l.type)) << 32 | uint32_t(l.id); }
static_assert(kLocationDevice == CU_MEM_LOCATION_TYPE_DEVICE && kLocationHost == CU_MEM_LOCATION_TYPE_HOST &&
              kLocationHostNuma == CU_MEM_LOCATION_TYPE_HOST_NUMA &&
              kLocationHostNumaCurrent == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);

inline void describe(Op<HookId::cuMemAlloc_v2>, Event& e, CUresult r, CUdeviceptr* dptr, size_t n) {
  e.set_size(n);
  if (ok(r)) e.set_addr(*dptr);
}
inline void describe(Op<HookId::cuMemAllocPitch_v2>, Event& e, CUresult r, CUdeviceptr* dptr,
                     size_t* pitch, size_t width, size_t height, unsigned) {
  e.set_size(ok(r) ? *pitch * height : width * height);
  if (ok(r)) e.set_addr(*dptr);
}
inline void describe(Op<HookId::cuMemFree_v2>, Event& e, CUresult, CUdeviceptr p) { e.set_addr(p); }
inline void describe(Op<HookId::cuMemAllocManaged>, Event& e, CUresult r, CUdeviceptr* dptr, size_t n,
                     unsigned flags) {
  e.set_size(n);
  e.set_aux(flags);
  if (ok(r)) e.set_addr(*dptr);
}
inline void describe(Op<HookId::cuMemHostAlloc>, Event& e, CUresult r, void** pp, size_t n, unsigned flags) {
  e.set_size(n);
  e.set_aux(flags);
  if (ok(r)) e.set_addr(u(*pp));
}
inline void describe(Op<HookId::cuMemAllocHost_v2>, Event& e, CUresult r, void** pp, size_t n) {
  e.set_size(n);
  if (ok(r)) e.set_addr(u(*pp));
}
inline void describe(Op<HookId::cuMemFreeHost>, Event& e, CUresult, void* p) { e.set_addr(u(p)); }
inline void describe(Op<HookId::cuMemHostRegister_v2>, Event& e, CUresult, void* p, size_t n, unsigned flags) {
  e.set_addr(u(p));
  e.set_size(n);
  e.set_aux(flags);
}
inline void describe(Op<HookId::cuMemHostUnregister>, Event& e, CUresult, void* p) { e.set_addr(u(p)); }
// A stream-ordered call on a capturing stream makes a graph node (format/accounting.h, rule 8):
// aux2 = 1. While no capture is active this is one relaxed load (graph_state.h).
inline void mark_captured(Event& e, CUstream s, bool ptsz) {
  if (__builtin_expect(captures_possible(), 0) && stream_captures(s, ptsz)) e.set_aux2(1);
}
inline void describe_alloc_async(Event& e, CUresult r, CUdeviceptr* dptr, size_t n, CUstream s, bool ptsz) {
  e.set_size(n);
  e.set_stream(u(s));
  if (ok(r)) e.set_addr(*dptr);
  mark_captured(e, s, ptsz);
}
inline void describe_free_async(Event& e, CUdeviceptr p, CUstream s, bool ptsz) {
  e.set_addr(p);
  e.set_stream(u(s));
  mark_captured(e, s, ptsz);
}
inline void describe(Op<HookId::cuMemAllocAsync>, Event& e, CUresult r, CUdeviceptr* dptr, size_t n, CUstream s) {
  describe_alloc_async(e, r, dptr, n, s, false);
}
inline void describe(Op<HookId::cuMemAllocAsync_ptsz>, Event& e, CUresult r, CUdeviceptr* dptr, size_t n,
                     CUstream s) {
  describe_alloc_async(e, r, dptr, n, s, true);
}
inline void describe(Op<HookId::cuMemFreeAsync>, Event& e, CUresult, CUdeviceptr p, CUstream s) {
  describe_free_async(e, p, s, false);
}
inline void describe(Op<HookId::cuMemFreeAsync_ptsz>, Event& e, CUresult, CUdeviceptr p, CUstream s) {
  describe_free_async(e, p, s, true);
}
inline void describe(Op<HookId::cuMemAllocFromPoolAsync>, Event& e, CUresult r, CUdeviceptr* dptr, size_t n,
                     CUmemoryPool pool, CUstream s) {
  describe_alloc_async(e, r, dptr, n, s, false);
  e.set_aux(u(pool));
}
inline void describe(Op<HookId::cuMemAllocFromPoolAsync_ptsz>, Event& e, CUresult r, CUdeviceptr* dptr,
                     size_t n, CUmemoryPool pool, CUstream s) {
  describe_alloc_async(e, r, dptr, n, s, true);
  e.set_aux(u(pool));
}
// A pool's location also says whether it makes managed memory (format/op_fields.h).
inline uint64_t pool_location(const CUmemLocation& l, CUmemAllocationType type) {
  return location(l) | (type == CU_MEM_ALLOCATION_TYPE_MANAGED ? kLocationManaged : 0);
}
inline void describe(Op<HookId::cuMemPoolCreate>, Event& e, CUresult r, CUmemoryPool* pool,
                     const CUmemPoolProps* props) {
  if (ok(r)) e.set_aux(u(*pool));
  if (props) e.set_aux2(pool_location(props->location, props->allocType));
  if (props && props->maxSize) e.set_size(props->maxSize);  // (older callers' reserved bytes: 0)
}
inline void describe(Op<HookId::cuMemPoolDestroy>, Event& e, CUresult, CUmemoryPool pool) { e.set_aux(u(pool)); }
inline void describe(Op<HookId::cuMemPoolTrimTo>, Event& e, CUresult, CUmemoryPool pool, size_t keep) {
  e.set_aux(u(pool));
  e.set_size(keep);
}
inline void describe(Op<HookId::cuMemCreate>, Event& e, CUresult r, CUmemGenericAllocationHandle* h, size_t n,
                     const CUmemAllocationProp* prop, unsigned long long) {
  e.set_size(n);
  if (ok(r)) e.set_aux(*h);
  if (prop) e.set_aux2(location(prop->location));
}
inline void describe(Op<HookId::cuMemRelease>, Event& e, CUresult, CUmemGenericAllocationHandle h) { e.set_aux(h); }
inline void describe(Op<HookId::cuMemMap>, Event& e, CUresult, CUdeviceptr p, size_t n, size_t offset,
                     CUmemGenericAllocationHandle h, unsigned long long) {
  e.set_addr(p);
  e.set_size(n);
  e.set_aux(h);
  e.set_aux2(offset);
}
inline void describe(Op<HookId::cuMemUnmap>, Event& e, CUresult, CUdeviceptr p, size_t n) {
  e.set_addr(p);
  e.set_size(n);
}
inline void describe(Op<HookId::cuMemAddressReserve>, Event& e, CUresult r, CUdeviceptr* p, size_t n, size_t,
                     CUdeviceptr, unsigned long long) {
  e.set_size(n);
  if (ok(r)) e.set_addr(*p);
}
inline void describe(Op<HookId::cuMemAddressFree>, Event& e, CUresult, CUdeviceptr p, size_t n) {
  e.set_addr(p);
  e.set_size(n);
}

// The bytes a CUDA array of `w` x `h` x `d` texels takes, from its format (cuda.h's
// CUarray_format): bits per texel with every channel of a texel (the ...X1/X2/X4 formats name
// theirs; the plain ones multiply by NumChannels), 4x4 blocks for the block-compressed formats,
// the planes of the YUV formats. The driver pads rows and aligns; this is what the data needs.
struct TexelSize {
  uint64_t bits = 0;        // per texel (0: block-compressed)
  uint64_t block_bytes = 0;  // per 4x4 block of a block-compressed format
};
inline TexelSize texel_size(CUarray_format f, unsigned channels) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return {8ull * channels, 0};
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return {16ull * channels, 0};
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return {32ull * channels, 0};
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: return {8, 0};
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1: case CU_AD_FORMAT_SNORM_INT16X1: return {16, 0};
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2: case CU_AD_FORMAT_SNORM_INT16X2: return {32, 0};
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: return {64, 0};
    case CU_AD_FORMAT_UNORM_INT_101010_2: return {32, 0};
    case CU_AD_FORMAT_BC1_UNORM: case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM: case CU_AD_FORMAT_BC4_SNORM: return {0, 8};
    case CU_AD_FORMAT_BC2_UNORM: case CU_AD_FORMAT_BC2_UNORM_SRGB: case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB: case CU_AD_FORMAT_BC5_UNORM: case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16: case CU_AD_FORMAT_BC6H_SF16: case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB: return {0, 16};
    case CU_AD_FORMAT_NV12: return {12, 0};                                   // 8-bit 4:2:0, two planes
    case CU_AD_FORMAT_P010: case CU_AD_FORMAT_P016: return {24, 0};           // 16-bit containers, 4:2:0
    case CU_AD_FORMAT_NV16: case CU_AD_FORMAT_YUY2: return {16, 0};           // 8-bit 4:2:2
    case CU_AD_FORMAT_P210: case CU_AD_FORMAT_P216: case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216: return {32, 0};                                   // 16-bit containers, 4:2:2
    case CU_AD_FORMAT_AYUV: case CU_AD_FORMAT_Y410: return {32, 0};           // packed 4:4:4
    case CU_AD_FORMAT_Y416: return {64, 0};
    case CU_AD_FORMAT_Y444_PLANAR8: case CU_AD_FORMAT_YUV444_8bit_SemiPlanar: return {24, 0};
    case CU_AD_FORMAT_Y444_PLANAR10: case CU_AD_FORMAT_YUV444_16bit_SemiPlanar: return {48, 0};
    default: return {32ull * channels, 0};  // a format newer than this list: 4 bytes per channel
  }
}
inline uint64_t at_least_one(size_t v) { return v ? v : 1; }
inline uint64_t array_bytes(CUarray_format f, unsigned channels, size_t w, size_t h, size_t d) {
  const TexelSize t = texel_size(f, channels);
  const uint64_t W = at_least_one(w), H = at_least_one(h), D = at_least_one(d);
  if (t.block_bytes) return ((W + 3) / 4) * ((H + 3) / 4) * D * t.block_bytes;
  return (W * H * D * t.bits + 7) / 8;
}

// The current descriptors and the CUDA 2.x ones (32-bit extents) alike.
template <typename D>
inline void describe_array(Event& e, CUresult r, CUarray* h, const D* d) {
  if (d) e.set_size(array_bytes(d->Format, d->NumChannels, d->Width, d->Height, 1));
  if (ok(r)) e.set_addr(u(*h));
}
// A sparse array or one with deferred mapping holds no memory of its own: its tiles are mapped
// from cuMemCreate handles (cuMemMapArrayAsync), which are counted where they are created.
template <typename D>
inline uint64_t array3d_bytes(const D& d) {
  if (d.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) return 0;
  return array_bytes(d.Format, d.NumChannels, d.Width, d.Height, d.Depth);
}
template <typename D>
inline void describe_array3d(Event& e, CUresult r, CUarray* h, const D* d) {
  if (d) e.set_size(array3d_bytes(*d));
  if (ok(r)) e.set_addr(u(*h));
}
inline void describe(Op<HookId::cuArrayCreate_v2>, Event& e, CUresult r, CUarray* h, const CUDA_ARRAY_DESCRIPTOR* d) {
  describe_array(e, r, h, d);
}
inline void describe(Op<HookId::cuArray3DCreate_v2>, Event& e, CUresult r, CUarray* h,
                     const CUDA_ARRAY3D_DESCRIPTOR* d) {
  describe_array3d(e, r, h, d);
}
// A mipmapped array: its levels' sizes, each extent halved per level (at least 1).
inline uint64_t mipmap_bytes(CUDA_ARRAY3D_DESCRIPTOR d, unsigned levels) {
  uint64_t sum = 0;
  for (unsigned l = 0; l < (levels ? levels : 1) && l < 32; ++l) {
    sum += array3d_bytes(d);
    d.Width = d.Width > 1 ? d.Width / 2 : d.Width;
    d.Height = d.Height > 1 ? d.Height / 2 : d.Height;
    d.Depth = d.Depth > 1 ? d.Depth / 2 : d.Depth;
  }
  return sum;
}
inline void describe(Op<HookId::cuArrayDestroy>, Event& e, CUresult, CUarray h) { e.set_addr(u(h)); }
// An imported address: the handle does not say how big the import is; the driver's address
// range does. Nor where it lives: another process's memory on another device is mapped into
// this context's, so the event's device becomes the memory's (cuPointerGetAttribute's ordinal),
// as a VMM import counts on its location's device (rule 10). Unreadable: the context's.
inline void describe_import(Event& e, CUdeviceptr p) {
  e.set_addr(p);
  CUdeviceptr base = 0;
  size_t size = 0;
  if (g_api.mem_get_address_range && g_api.mem_get_address_range(&base, &size, p) == CUDA_SUCCESS) e.set_size(size);
  int ordinal = -1;
  if (g_api.pointer_get_attribute &&
      g_api.pointer_get_attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == CUDA_SUCCESS && ordinal >= 0)
    e.device = int32_t(ordinal);
}
inline void describe(Op<HookId::cuIpcOpenMemHandle_v2>, Event& e, CUresult r, CUdeviceptr* p, CUipcMemHandle,
                     unsigned flags) {
  e.set_aux(flags);
  if (ok(r)) describe_import(e, *p);
}
inline void describe(Op<HookId::cuIpcCloseMemHandle>, Event& e, CUresult, CUdeviceptr p) { e.set_addr(p); }
inline void describe(Op<HookId::cuCtxDestroy_v2>, Event& e, CUresult, CUcontext c) { e.set_aux(u(c)); }
inline void describe(Op<HookId::cuDevicePrimaryCtxReset_v2>, Event& e, CUresult, CUdevice dev) { e.set_aux(uint64_t(dev)); }
inline void describe(Op<HookId::cuDevicePrimaryCtxReset>, Event& e, CUresult, CUdevice dev) { e.set_aux(uint64_t(dev)); }
inline void describe(Op<HookId::cuIpcOpenMemHandle>, Event& e, CUresult r, CUdeviceptr* p, CUipcMemHandle h,
                     unsigned flags) {
  describe(Op<HookId::cuIpcOpenMemHandle_v2>{}, e, r, p, h, flags);
}

// ---- sharing (format/accounting.h, rules 10 to 13) ----

inline void describe(Op<HookId::cuMemImportFromShareableHandle>, Event& e, CUresult r,
                     CUmemGenericAllocationHandle* h, void*, CUmemAllocationHandleType) {
  if (!ok(r)) return;
  e.set_aux(*h);
  // Where the imported memory lives. Its size no call tells: its mappings do (rule 10).
  CUmemAllocationProp prop{};
  if (g_api.mem_get_allocation_properties_from_handle &&
      g_api.mem_get_allocation_properties_from_handle(&prop, *h) == CUDA_SUCCESS)
    e.set_aux2(location(prop.location));
}
inline void describe(Op<HookId::cuMemRetainAllocationHandle>, Event& e, CUresult r, CUmemGenericAllocationHandle* h,
                     void* addr) {
  e.set_addr(u(addr));
  if (ok(r)) e.set_aux(*h);
}
inline void describe(Op<HookId::cuMemExportToShareableHandle>, Event& e, CUresult, void*, CUmemGenericAllocationHandle h,
                     CUmemAllocationHandleType type, unsigned long long) {
  e.set_aux(h);
  e.set_aux2(uint64_t(type));
}
inline void describe(Op<HookId::cuIpcGetMemHandle>, Event& e, CUresult, CUipcMemHandle*, CUdeviceptr p) { e.set_addr(p); }
inline void describe(Op<HookId::cuMemGetHandleForAddressRange>, Event& e, CUresult, void*, CUdeviceptr p, size_t n,
                     CUmemRangeHandleType type, unsigned long long) {
  e.set_addr(p);
  e.set_size(n);
  e.set_aux(uint64_t(type));
}
inline void describe(Op<HookId::cuMemPoolExportToShareableHandle>, Event& e, CUresult, void*, CUmemoryPool pool,
                     CUmemAllocationHandleType type, unsigned long long) {
  e.set_aux(u(pool));
  e.set_aux2(uint64_t(type));
}
inline void describe(Op<HookId::cuMemPoolImportFromShareableHandle>, Event& e, CUresult r, CUmemoryPool* pool, void*,
                     CUmemAllocationHandleType type, unsigned long long) {
  if (ok(r) && pool) e.set_aux(u(*pool));
  e.set_aux2(uint64_t(type));
}
inline void describe(Op<HookId::cuMemPoolExportPointer>, Event& e, CUresult, CUmemPoolPtrExportData*, CUdeviceptr p) {
  e.set_addr(p);
}
inline void describe(Op<HookId::cuMemPoolImportPointer>, Event& e, CUresult r, CUdeviceptr* p, CUmemoryPool pool,
                     CUmemPoolPtrExportData*) {
  e.set_aux(u(pool));
  if (ok(r)) describe_import(e, *p);
}

// Multicast objects (rule 12).
inline void describe(Op<HookId::cuMulticastCreate>, Event& e, CUresult r, CUmemGenericAllocationHandle* mc,
                     const CUmulticastObjectProp* prop) {
  if (prop) {
    e.set_size(prop->size);
    e.set_aux2(prop->numDevices);
  }
  if (ok(r)) e.set_aux(*mc);
}
inline void describe(Op<HookId::cuMulticastAddDevice>, Event& e, CUresult, CUmemGenericAllocationHandle mc, CUdevice dev) {
  e.set_aux(mc);
  e.set_aux2(uint64_t(uint32_t(dev)));
}
inline void describe(Op<HookId::cuMulticastBindMem>, Event& e, CUresult, CUmemGenericAllocationHandle mc,
                     size_t mc_offset, CUmemGenericAllocationHandle mem, size_t, size_t n, unsigned long long) {
  e.set_addr(mc_offset);
  e.set_size(n);
  e.set_aux(mc);
  e.set_aux2(mem);
}
inline void describe(Op<HookId::cuMulticastBindAddr>, Event& e, CUresult, CUmemGenericAllocationHandle mc,
                     size_t mc_offset, CUdeviceptr p, size_t n, unsigned long long) {
  e.set_addr(p);
  e.set_size(n);
  e.set_aux(mc);
  e.set_aux2(mc_offset);
}
inline void describe(Op<HookId::cuMulticastUnbind>, Event& e, CUresult, CUmemGenericAllocationHandle mc, CUdevice dev,
                     size_t mc_offset, size_t n) {
  e.set_addr(mc_offset);
  e.set_size(n);
  e.set_aux(mc);
  e.set_aux2(uint64_t(uint32_t(dev)));
}

// External memory (rule 13).
inline void describe(Op<HookId::cuImportExternalMemory>, Event& e, CUresult r, CUexternalMemory* ext,
                     const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* d) {
  if (d) {
    e.set_size(d->size);
    e.set_aux2(uint64_t(d->type));
  }
  if (ok(r) && ext) e.set_aux(u(*ext));
}
inline void describe(Op<HookId::cuExternalMemoryGetMappedBuffer>, Event& e, CUresult r, CUdeviceptr* p,
                     CUexternalMemory ext, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* d) {
  e.set_aux(u(ext));
  if (d) {
    e.set_size(d->size);
    e.set_aux2(d->offset);
  }
  if (ok(r)) e.set_addr(*p);
}
inline void describe(Op<HookId::cuExternalMemoryGetMappedMipmappedArray>, Event& e, CUresult r, CUmipmappedArray* m,
                     CUexternalMemory ext, const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* d) {
  e.set_aux(u(ext));
  if (d) {
    e.set_size(mipmap_bytes(d->arrayDesc, d->numLevels));
    e.set_aux2(d->numLevels);
  }
  if (ok(r)) e.set_addr(u(*m));
}
inline void describe(Op<HookId::cuDestroyExternalMemory>, Event& e, CUresult, CUexternalMemory ext) { e.set_aux(u(ext)); }
inline void describe(Op<HookId::cuMipmappedArrayCreate>, Event& e, CUresult r, CUmipmappedArray* m,
                     const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned levels) {
  if (d) e.set_size(mipmap_bytes(*d, levels));
  e.set_aux(levels);
  if (ok(r)) e.set_addr(u(*m));
}
inline void describe(Op<HookId::cuMipmappedArrayDestroy>, Event& e, CUresult, CUmipmappedArray m) { e.set_addr(u(m)); }
inline void describe(Op<HookId::cuMemMapArrayAsync>, Event& e, CUresult, CUarrayMapInfo*, unsigned count, CUstream s) {
  e.set_aux(count);
  e.set_aux2(u(s));
}
inline void describe(Op<HookId::cuMemMapArrayAsync_ptsz>, Event& e, CUresult, CUarrayMapInfo*, unsigned count,
                     CUstream s) {
  e.set_aux(count);
  e.set_aux2(u(s));
}

// The CUDA 2.x ABI: the same meaning, 32-bit values.
inline void describe(Op<HookId::cuMemAlloc>, Event& e, CUresult r, vt_CUdeviceptr_v1* p, unsigned n) {
  e.set_size(n);
  if (ok(r)) e.set_addr(*p);
}
inline void describe(Op<HookId::cuMemFree>, Event& e, CUresult, vt_CUdeviceptr_v1 p) { e.set_addr(p); }
inline void describe(Op<HookId::cuMemAllocHost>, Event& e, CUresult r, void** pp, unsigned n) {
  e.set_size(n);
  if (ok(r)) e.set_addr(u(*pp));
}
inline void describe(Op<HookId::cuMemAllocPitch>, Event& e, CUresult r, vt_CUdeviceptr_v1* p, unsigned* pitch,
                     unsigned width, unsigned height, unsigned) {
  e.set_size(ok(r) ? uint64_t(*pitch) * height : uint64_t(width) * height);
  if (ok(r)) e.set_addr(*p);
}
inline void describe(Op<HookId::cuArrayCreate>, Event& e, CUresult r, CUarray* h, const vt_CUDA_ARRAY_DESCRIPTOR_v1* d) {
  describe_array(e, r, h, d);
}
inline void describe(Op<HookId::cuArray3DCreate>, Event& e, CUresult r, CUarray* h,
                     const vt_CUDA_ARRAY3D_DESCRIPTOR_v1* d) {
  describe_array3d(e, r, h, d);
}
inline void describe(Op<HookId::cuMemHostRegister>, Event& e, CUresult r, void* p, size_t n, unsigned flags) {
  describe(Op<HookId::cuMemHostRegister_v2>{}, e, r, p, n, flags);
}

// The active primary context of `dev`, or 0. Retain + release leaves its reference count as it
// was, so the context stays alive.
inline uint64_t active_primary_context(CUdevice dev) {
  unsigned flags = 0;
  int active = 0;
  CUcontext ctx = nullptr;
  if (!g_api.primary_ctx_get_state || g_api.primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
    return 0;
  if (g_api.primary_ctx_retain(&ctx, dev) != CUDA_SUCCESS) return 0;
  g_api.primary_ctx_release(dev);
  return u(ctx);
}

// A release destroys the primary context only when it drops the last reference: aux2 is the
// context when that happened, else 0.
inline void describe_release(Event& e, CUresult r, CUdevice dev) {
  e.set_aux(uint64_t(dev));
  if (r != CUDA_SUCCESS || active_primary_context(dev) != 0) e.aux2 = 0;
}
inline void describe(Op<HookId::cuDevicePrimaryCtxRelease>, Event& e, CUresult r, CUdevice dev) { describe_release(e, r, dev); }
inline void describe(Op<HookId::cuDevicePrimaryCtxRelease_v2>, Event& e, CUresult r, CUdevice dev) { describe_release(e, r, dev); }

// ---- CUDA graphs and stream capture ----
static_assert(kGraphNodeMemAlloc == CU_GRAPH_NODE_TYPE_MEM_ALLOC && kGraphNodeGraph == CU_GRAPH_NODE_TYPE_GRAPH);

inline void describe(Op<HookId::cuGraphAddMemAllocNode>, Event& e, CUresult r, CUgraphNode*, CUgraph g,
                     const CUgraphNode*, size_t, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  e.set_aux(u(g));
  if (!p) return;
  e.set_size(p->bytesize);
  e.set_aux2(location(p->poolProps.location));
  if (ok(r)) e.set_addr(p->dptr);
}
inline void describe(Op<HookId::cuGraphAddMemFreeNode>, Event& e, CUresult, CUgraphNode*, CUgraph g,
                     const CUgraphNode*, size_t, CUdeviceptr p) {
  e.set_aux(u(g));
  e.set_addr(p);
}
// A child graph node says which parent the child went into (addr: the child graph; aux2: the
// type | the ownership << 32, 1 = moved in with its memory nodes). A node of any other type holds
// no memory: not recorded.
static_assert(kGraphChildMoved == uint64_t(CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) << 32);
inline void describe_add_node(Event& e, CUresult r, CUgraph g, CUgraphNodeParams* p) {
  if (!p || (p->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && p->type != CU_GRAPH_NODE_TYPE_MEM_FREE &&
             p->type != CU_GRAPH_NODE_TYPE_GRAPH)) {
    e.drop = true;
    return;
  }
  e.set_aux(u(g));
  e.set_aux2(uint64_t(p->type));
  if (p->type == CU_GRAPH_NODE_TYPE_GRAPH) {
    e.set_addr(u(p->graph.graph));
    e.set_aux2(uint64_t(p->type) | uint64_t(p->graph.ownership) << 32);
    return;
  }
  if (p->type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
    e.set_addr(p->free.dptr);
    return;
  }
  e.set_size(p->alloc.bytesize);
  if (ok(r)) e.set_addr(p->alloc.dptr);
}
inline void describe(Op<HookId::cuGraphAddNode>, Event& e, CUresult r, CUgraphNode*, CUgraph g, const CUgraphNode*,
                     size_t, CUgraphNodeParams* p) {
  describe_add_node(e, r, g, p);
}
inline void describe(Op<HookId::cuGraphAddNode_v2>, Event& e, CUresult r, CUgraphNode*, CUgraph g,
                     const CUgraphNode*, const CUgraphEdgeData*, size_t, CUgraphNodeParams* p) {
  describe_add_node(e, r, g, p);
}

// The graph pool after a graph op (rule 9): size = reserved, aux = used. Returns whether it
// changed since the last sample of that device.
inline bool describe_graph_pool(Event& e, int32_t device) {
  uint64_t reserved = 0, used = 0;
  bool changed = false;
  if (!sample_graph_pool(device, &reserved, &used, &changed)) return false;
  e.set_size(reserved);
  e.set_aux(used);
  return changed;
}
inline void describe_instantiate(Event& e, CUresult r, CUgraphExec* exec, CUgraph g) {
  e.set_aux2(u(g));
  if (!ok(r)) return;
  if (exec) e.set_addr(u(*exec));
  describe_graph_pool(e, e.device);  // CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads it now
}
inline void describe(Op<HookId::cuGraphInstantiate>, Event& e, CUresult r, CUgraphExec* x, CUgraph g, CUgraphNode*,
                     char*, size_t) {
  describe_instantiate(e, r, x, g);
}
inline void describe(Op<HookId::cuGraphInstantiate_v2>, Event& e, CUresult r, CUgraphExec* x, CUgraph g,
                     CUgraphNode*, char*, size_t) {
  describe_instantiate(e, r, x, g);
}
inline void describe(Op<HookId::cuGraphInstantiateWithFlags>, Event& e, CUresult r, CUgraphExec* x, CUgraph g,
                     unsigned long long) {
  describe_instantiate(e, r, x, g);
}
inline void describe(Op<HookId::cuGraphInstantiateWithParams>, Event& e, CUresult r, CUgraphExec* x, CUgraph g,
                     CUDA_GRAPH_INSTANTIATE_PARAMS*) {
  describe_instantiate(e, r, x, g);
}
inline void describe(Op<HookId::cuGraphInstantiateWithParams_ptsz>, Event& e, CUresult r, CUgraphExec* x,
                     CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS*) {
  describe_instantiate(e, r, x, g);
}
// Upload and launch: a training loop relaunches the same graph, whose memory is already there:
// a launch that left the pool as it was is not recorded (one sample, no record). A failure is.
inline void describe_run(Event& e, CUresult r, CUgraphExec x, CUstream s) {
  e.set_addr(u(x));
  e.set_aux2(u(s));
  if (ok(r) && !describe_graph_pool(e, e.device)) e.drop = true;
}
inline void describe(Op<HookId::cuGraphUpload>, Event& e, CUresult r, CUgraphExec x, CUstream s) { describe_run(e, r, x, s); }
inline void describe(Op<HookId::cuGraphUpload_ptsz>, Event& e, CUresult r, CUgraphExec x, CUstream s) { describe_run(e, r, x, s); }
inline void describe(Op<HookId::cuGraphLaunch>, Event& e, CUresult r, CUgraphExec x, CUstream s) { describe_run(e, r, x, s); }
inline void describe(Op<HookId::cuGraphLaunch_ptsz>, Event& e, CUresult r, CUgraphExec x, CUstream s) { describe_run(e, r, x, s); }
inline void describe(Op<HookId::cuGraphExecDestroy>, Event& e, CUresult r, CUgraphExec x) {
  e.set_addr(u(x));
  if (ok(r)) describe_graph_pool(e, e.device);
}
inline void describe(Op<HookId::cuGraphDestroy>, Event& e, CUresult r, CUgraph g) {
  e.set_addr(u(g));
  if (ok(r)) describe_graph_pool(e, e.device);
}
inline void describe(Op<HookId::cuDeviceGraphMemTrim>, Event& e, CUresult r, CUdevice dev) {
  e.set_aux2(uint64_t(uint32_t(dev)));
  if (ok(r)) describe_graph_pool(e, int32_t(dev));
}
// Queries: never recorded (Action::Query), so never described.
inline void describe(Op<HookId::cuDeviceGetGraphMemAttribute>, Event&, CUresult, CUdevice, CUgraphMem_attribute, void*) {}
inline void describe(Op<HookId::cuDeviceSetGraphMemAttribute>, Event&, CUresult, CUdevice, CUgraphMem_attribute, void*) {}
inline void describe(Op<HookId::cuStreamIsCapturing>, Event&, CUresult, CUstream, CUstreamCaptureStatus*) {}
inline void describe(Op<HookId::cuStreamIsCapturing_ptsz>, Event&, CUresult, CUstream, CUstreamCaptureStatus*) {}
// (the synchronizes: hooks.cpp writes rule 15's record after them, pool_sync.h)
inline void describe(Op<HookId::cuCtxSynchronize>, Event&, CUresult) {}
inline void describe(Op<HookId::cuCtxSynchronize_v2>, Event&, CUresult, CUcontext) {}
inline void describe(Op<HookId::cuStreamSynchronize>, Event&, CUresult, CUstream) {}
inline void describe(Op<HookId::cuStreamSynchronize_ptsz>, Event&, CUresult, CUstream) {}
inline void describe(Op<HookId::cuEventSynchronize>, Event&, CUresult, CUevent) {}

inline void describe(Op<HookId::cuStreamBeginCapture>, Event& e, CUresult, CUstream s) { e.set_addr(u(s)); }
inline void describe(Op<HookId::cuStreamBeginCapture_ptsz>, Event& e, CUresult, CUstream s) { e.set_addr(u(s)); }
inline void describe(Op<HookId::cuStreamBeginCapture_v2>, Event& e, CUresult, CUstream s, CUstreamCaptureMode m) {
  e.set_addr(u(s));
  e.set_aux(uint64_t(m));
}
inline void describe(Op<HookId::cuStreamBeginCapture_v2_ptsz>, Event& e, CUresult, CUstream s, CUstreamCaptureMode m) {
  e.set_addr(u(s));
  e.set_aux(uint64_t(m));
}
inline void describe(Op<HookId::cuStreamBeginCaptureToGraph>, Event& e, CUresult, CUstream s, CUgraph g,
                     const CUgraphNode*, const CUgraphEdgeData*, size_t, CUstreamCaptureMode m) {
  e.set_addr(u(s));
  e.set_aux(uint64_t(m));
  e.set_aux2(u(g));
}
inline void describe(Op<HookId::cuStreamBeginCaptureToGraph_ptsz>, Event& e, CUresult, CUstream s, CUgraph g,
                     const CUgraphNode*, const CUgraphEdgeData*, size_t, CUstreamCaptureMode m) {
  e.set_addr(u(s));
  e.set_aux(uint64_t(m));
  e.set_aux2(u(g));
}
inline void describe(Op<HookId::cuStreamEndCapture>, Event& e, CUresult r, CUstream s, CUgraph* g) {
  e.set_addr(u(s));
  if (ok(r) && g) e.set_aux(u(*g));
}
inline void describe(Op<HookId::cuStreamEndCapture_ptsz>, Event& e, CUresult r, CUstream s, CUgraph* g) {
  e.set_addr(u(s));
  if (ok(r) && g) e.set_aux(u(*g));
}

// ---- contexts and code (format/accounting.h, rule 14) ----
// size = free bytes before (prepare), aux = free bytes after; both absent when not readable.
inline void code_before(Event& e, int32_t device) {
  uint64_t f = 0;
  if (free_on_device(device, &f)) e.set_size(f);
}
inline void code_after(Event& e, uint64_t ctx) {  // ctx 0: the current context's device
  uint64_t f = 0;
  if (ctx ? free_in_context(ctx, &f) : free_on_device(-1, &f)) e.set_aux(f);
}
// A failed call keeps no `before`: SIZE of a failed acquire is what it asked for (nothing here).
inline void code_failed(Event& e) {
  e.fields &= uint8_t(~format::kEvSize);
  e.size = 0;
}
inline void describe_ctx_made(Event& e, CUresult r, uint64_t ctx, CUdevice dev) {
  e.set_aux2(uint64_t(uint32_t(dev)));
  if (!ok(r)) return code_failed(e);
  e.set_addr(ctx);
  code_after(e, ctx);
}
inline void describe_loaded(Event& e, CUresult r, uint64_t object) {
  if (!ok(r)) return code_failed(e);
  e.set_addr(object);
  code_after(e, 0);
}
// A lazy load shows only when the free memory changed.
inline void describe_lazy(Event& e, CUresult r, uint64_t object) {
  if (e.drop) return;
  describe_loaded(e, r, object);
  if (ok(r) && (e.fields & format::kEvSize) && (e.fields & format::kEvAux) && e.size == e.aux) e.drop = true;
}

inline void describe(Op<HookId::cuCtxCreate>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuCtxCreate_v2>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuCtxCreate_v3>, Event& e, CUresult r, CUcontext* p, CUexecAffinityParam*, int,
                     unsigned, CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuCtxCreate_v4>, Event& e, CUresult r, CUcontext* p, CUctxCreateParams*, unsigned,
                     CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuGLCtxCreate>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuGLCtxCreate_v2>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuVDPAUCtxCreate>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev,
                     vt_VdpDevice, vt_VdpGetProcAddress*) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
inline void describe(Op<HookId::cuVDPAUCtxCreate_v2>, Event& e, CUresult r, CUcontext* p, unsigned, CUdevice dev,
                     vt_VdpDevice, vt_VdpGetProcAddress*) {
  describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
// Graphs: the graph made, or the graph a child graph is added to (no memory of their own).
inline void describe(Op<HookId::cuGraphCreate>, Event& e, CUresult r, CUgraph* g, unsigned) {
  if (ok(r) && g) e.set_aux(u(*g));
}
inline void describe(Op<HookId::cuGraphAddChildGraphNode>, Event& e, CUresult, CUgraphNode*, CUgraph g,
                     const CUgraphNode*, size_t, CUgraph) {
  e.set_aux(u(g));
}
// Only the retain that creates the primary context is recorded (prepare drops the others).
inline void describe(Op<HookId::cuDevicePrimaryCtxRetain>, Event& e, CUresult r, CUcontext* p, CUdevice dev) {
  if (!e.drop) describe_ctx_made(e, r, ok(r) && p ? u(*p) : 0, dev);
}
// A green context is known by its CUcontext: the one its events and its destroy name.
inline uint64_t green_context(CUgreenCtx g) {
  CUcontext c = nullptr;
  if (g_api.ctx_from_green_ctx && g_api.ctx_from_green_ctx(&c, g) == CUDA_SUCCESS && c) return u(c);
  return u(g);
}
inline void describe(Op<HookId::cuGreenCtxCreate>, Event& e, CUresult r, CUgreenCtx* p, CUdevResourceDesc, CUdevice dev,
                     unsigned) {
  describe_ctx_made(e, r, ok(r) && p ? green_context(*p) : 0, dev);
}
inline void describe(Op<HookId::cuGreenCtxDestroy>, Event&, CUresult, CUgreenCtx) {}  // prepare named it
inline void describe(Op<HookId::cuCtxDestroy>, Event& e, CUresult, CUcontext c) { e.set_aux(u(c)); }
inline void describe(Op<HookId::cuCtxDetach>, Event& e, CUresult, CUcontext c) { e.set_aux(u(c)); }
inline void describe(Op<HookId::cuCtxSetLimit>, Event& e, CUresult r, CUlimit limit, size_t value) {
  e.set_addr(value);
  e.set_aux2(uint64_t(limit));
  if (!ok(r)) return code_failed(e);
  code_after(e, 0);
}
inline void describe(Op<HookId::cuModuleLoad>, Event& e, CUresult r, CUmodule* m, const char*) {
  describe_loaded(e, r, ok(r) && m ? u(*m) : 0);
}
inline void describe(Op<HookId::cuModuleLoadData>, Event& e, CUresult r, CUmodule* m, const void*) {
  describe_loaded(e, r, ok(r) && m ? u(*m) : 0);
}
inline void describe(Op<HookId::cuModuleLoadDataEx>, Event& e, CUresult r, CUmodule* m, const void*, unsigned,
                     CUjit_option*, void**) {
  describe_loaded(e, r, ok(r) && m ? u(*m) : 0);
}
inline void describe(Op<HookId::cuModuleLoadFatBinary>, Event& e, CUresult r, CUmodule* m, const void*) {
  describe_loaded(e, r, ok(r) && m ? u(*m) : 0);
}
inline void describe(Op<HookId::cuModuleUnload>, Event& e, CUresult, CUmodule m) { e.set_addr(u(m)); }
inline void describe(Op<HookId::cuLibraryLoadData>, Event& e, CUresult r, CUlibrary* l, const void*, CUjit_option*,
                     void**, unsigned, CUlibraryOption*, void**, unsigned) {
  describe_loaded(e, r, ok(r) && l ? u(*l) : 0);
}
inline void describe(Op<HookId::cuLibraryLoadFromFile>, Event& e, CUresult r, CUlibrary* l, const char*,
                     CUjit_option*, void**, unsigned, CUlibraryOption*, void**, unsigned) {
  describe_loaded(e, r, ok(r) && l ? u(*l) : 0);
}
inline void describe(Op<HookId::cuLibraryUnload>, Event& e, CUresult, CUlibrary l) { e.set_addr(u(l)); }
inline void describe(Op<HookId::cuLibraryGetModule>, Event& e, CUresult r, CUmodule*, CUlibrary l) {
  describe_lazy(e, r, u(l));
}
// The code is the kernel's library's (its unload gives it back); the kernel when that is unknown.
inline uint64_t kernel_library(CUkernel k) {
  CUlibrary l = nullptr;
  if (g_api.kernel_get_library && g_api.kernel_get_library(&l, k) == CUDA_SUCCESS && l) return u(l);
  return u(k);
}
inline void describe(Op<HookId::cuKernelGetFunction>, Event& e, CUresult r, CUfunction*, CUkernel k) {
  if (!e.drop) describe_lazy(e, r, kernel_library(k));
}

// ---- pools by location, pool attributes ----
static_assert(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD == kPoolAttrReleaseThreshold, "format/accounting.h, rule 15");
inline void describe(Op<HookId::cuMemPoolSetAttribute>, Event& e, CUresult, CUmemoryPool pool, CUmemPool_attribute attr,
                     void* value) {
  e.set_aux(u(pool));
  e.set_aux2(uint64_t(attr));
  if (!value) return;
  const bool flag = attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
                    attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
  e.set_size(flag ? uint64_t(uint32_t(*static_cast<const int*>(value))) : *static_cast<const cuuint64_t*>(value));
}
inline void describe(Op<HookId::cuDeviceSetMemPool>, Event& e, CUresult, CUdevice dev, CUmemoryPool pool) {
  e.set_aux(u(pool));
  e.set_aux2(uint64_t(kLocationDevice) << 32 | uint32_t(dev));
}
inline void describe_location_pool(Event& e, CUresult r, CUmemoryPool* out, const CUmemLocation* l, CUmemAllocationType t) {
  if (ok(r) && out) e.set_aux(u(*out));
  if (l) e.set_aux2(pool_location(*l, t));
}
inline void describe(Op<HookId::cuMemGetDefaultMemPool>, Event& e, CUresult r, CUmemoryPool* out, CUmemLocation* l,
                     CUmemAllocationType t) {
  describe_location_pool(e, r, out, l, t);
}
inline void describe(Op<HookId::cuMemGetMemPool>, Event& e, CUresult r, CUmemoryPool* out, CUmemLocation* l,
                     CUmemAllocationType t) {
  describe_location_pool(e, r, out, l, t);
}
inline void describe_device_pool(Event& e, CUresult r, CUmemoryPool* out, CUdevice dev) {
  if (ok(r) && out) e.set_aux(u(*out));
  e.set_aux2(uint64_t(kLocationDevice) << 32 | uint32_t(dev));
}
inline void describe(Op<HookId::cuDeviceGetDefaultMemPool>, Event& e, CUresult r, CUmemoryPool* out, CUdevice dev) {
  describe_device_pool(e, r, out, dev);
}
inline void describe(Op<HookId::cuDeviceGetMemPool>, Event& e, CUresult r, CUmemoryPool* out, CUdevice dev) {
  describe_device_pool(e, r, out, dev);
}
inline void describe(Op<HookId::cuMemSetMemPool>, Event& e, CUresult, CUmemLocation* l, CUmemAllocationType t,
                     CUmemoryPool pool) {
  e.set_aux(u(pool));
  if (l) e.set_aux2(pool_location(*l, t));
}

// ---- What the recorder's own state follows, by the op's kind (after the real call) ----------
// After every real call, recorded or not (beside observe(), below).
template <HookId Id>
inline void follow_any_call(CUresult r, bool nested_in_our_work) {
  constexpr OpInfo op = kOps[int(Id)];
  if constexpr (op.kind == MemKind::Context && op.action == Action::Release)
    contexts_torn_down();  // a context may come back at this one's address, on another device
  if constexpr (op.kind == MemKind::Sync)  // rule 15: pools may give memory back here
    if (ok(r) && !nested_in_our_work) pools_synchronized();
}
// After a real call whose event is recorded: what only matters while recording (rule 15's
// bookkeeping of what a synchronize may give back).
template <HookId Id>
inline void follow_recorded_call(CUresult r) {
  constexpr OpInfo op = kOps[int(Id)];
  if constexpr ((op.kind == MemKind::Async && op.action == Action::Release) || Id == HookId::cuMemPoolSetAttribute)
    if (ok(r)) pool_memory_freed();  // a synchronize may now give memory back
  if constexpr (op.kind == MemKind::Async && op.action == Action::Acquire)
    if (ok(r)) stream_ordered_allocated();
  if constexpr (Id == HookId::cuMemFree_v2 || Id == HookId::cuMemFree)  // (of stream-ordered memory too)
    if (ok(r)) plain_memory_freed();
}

// observe() runs after every real call, recorded or not (tracing may be off): it keeps
// graph_state.h's table of capturing streams true.
template <HookId I, typename... A>
inline void observe(Op<I>, CUresult, A...) {}
inline void observe(Op<HookId::cuStreamBeginCapture>, CUresult r, CUstream s) { if (ok(r)) capture_began(s, false); }
inline void observe(Op<HookId::cuStreamBeginCapture_ptsz>, CUresult r, CUstream s) { if (ok(r)) capture_began(s, true); }
inline void observe(Op<HookId::cuStreamBeginCapture_v2>, CUresult r, CUstream s, CUstreamCaptureMode) {
  if (ok(r)) capture_began(s, false);
}
inline void observe(Op<HookId::cuStreamBeginCapture_v2_ptsz>, CUresult r, CUstream s, CUstreamCaptureMode) {
  if (ok(r)) capture_began(s, true);
}
inline void observe(Op<HookId::cuStreamBeginCaptureToGraph>, CUresult r, CUstream s, CUgraph, const CUgraphNode*,
                    const CUgraphEdgeData*, size_t, CUstreamCaptureMode) {
  if (ok(r)) capture_began(s, false);
}
inline void observe(Op<HookId::cuStreamBeginCaptureToGraph_ptsz>, CUresult r, CUstream s, CUgraph,
                    const CUgraphNode*, const CUgraphEdgeData*, size_t, CUstreamCaptureMode) {
  if (ok(r)) capture_began(s, true);
}
inline void observe(Op<HookId::cuStreamEndCapture>, CUresult, CUstream s, CUgraph*) { capture_end_attempted(s, false); }
inline void observe(Op<HookId::cuStreamEndCapture_ptsz>, CUresult, CUstream s, CUgraph*) { capture_end_attempted(s, true); }
inline void observe(Op<HookId::cuStreamIsCapturing>, CUresult r, CUstream, CUstreamCaptureStatus* st) {
  if (ok(r) && st) capture_status_seen(*st);
}
inline void observe(Op<HookId::cuStreamIsCapturing_ptsz>, CUresult r, CUstream, CUstreamCaptureStatus* st) {
  if (ok(r) && st) capture_status_seen(*st);
}

// prepare() runs before the real call, for the few ops whose meaning must be read first.
template <HookId I, typename... A>
inline void prepare(Op<I>, Event&, A...) {}

// aux2 = the primary context about to be reset or released (its memory may go with it).
inline void prepare(Op<HookId::cuDevicePrimaryCtxReset_v2>, Event& e, CUdevice dev) { e.set_aux2(active_primary_context(dev)); }
inline void prepare(Op<HookId::cuDevicePrimaryCtxReset>, Event& e, CUdevice dev) { e.set_aux2(active_primary_context(dev)); }
inline void prepare(Op<HookId::cuDevicePrimaryCtxRelease>, Event& e, CUdevice dev) { e.set_aux2(active_primary_context(dev)); }
inline void prepare(Op<HookId::cuDevicePrimaryCtxRelease_v2>, Event& e, CUdevice dev) { e.set_aux2(active_primary_context(dev)); }

// Rule 14: the free memory before (size); a green context's CUcontext while it still exists.
inline void prepare(Op<HookId::cuCtxCreate>, Event& e, CUcontext*, unsigned, CUdevice dev) { code_before(e, int32_t(dev)); }
inline void prepare(Op<HookId::cuCtxCreate_v2>, Event& e, CUcontext*, unsigned, CUdevice dev) { code_before(e, int32_t(dev)); }
inline void prepare(Op<HookId::cuCtxCreate_v3>, Event& e, CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice dev) {
  code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuCtxCreate_v4>, Event& e, CUcontext*, CUctxCreateParams*, unsigned, CUdevice dev) {
  code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuGLCtxCreate>, Event& e, CUcontext*, unsigned, CUdevice dev) { code_before(e, int32_t(dev)); }
inline void prepare(Op<HookId::cuGLCtxCreate_v2>, Event& e, CUcontext*, unsigned, CUdevice dev) { code_before(e, int32_t(dev)); }
inline void prepare(Op<HookId::cuVDPAUCtxCreate>, Event& e, CUcontext*, unsigned, CUdevice dev, vt_VdpDevice,
                    vt_VdpGetProcAddress*) {
  code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuVDPAUCtxCreate_v2>, Event& e, CUcontext*, unsigned, CUdevice dev, vt_VdpDevice,
                    vt_VdpGetProcAddress*) {
  code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuDevicePrimaryCtxRetain>, Event& e, CUcontext*, CUdevice dev) {
  if (active_primary_context(dev))
    e.drop = true;  // it exists: this retain creates nothing
  else
    code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuGreenCtxCreate>, Event& e, CUgreenCtx*, CUdevResourceDesc, CUdevice dev, unsigned) {
  code_before(e, int32_t(dev));
}
inline void prepare(Op<HookId::cuGreenCtxDestroy>, Event& e, CUgreenCtx g) { e.set_aux(green_context(g)); }
inline void prepare(Op<HookId::cuCtxSetLimit>, Event& e, CUlimit, size_t) { code_before(e, -1); }
inline void prepare(Op<HookId::cuModuleLoad>, Event& e, CUmodule*, const char*) { code_before(e, -1); }
inline void prepare(Op<HookId::cuModuleLoadData>, Event& e, CUmodule*, const void*) { code_before(e, -1); }
inline void prepare(Op<HookId::cuModuleLoadDataEx>, Event& e, CUmodule*, const void*, unsigned, CUjit_option*, void**) {
  code_before(e, -1);
}
inline void prepare(Op<HookId::cuModuleLoadFatBinary>, Event& e, CUmodule*, const void*) { code_before(e, -1); }
inline void prepare(Op<HookId::cuLibraryLoadData>, Event& e, CUlibrary*, const void*, CUjit_option*, void**, unsigned,
                    CUlibraryOption*, void**, unsigned) {
  code_before(e, -1);
}
inline void prepare(Op<HookId::cuLibraryLoadFromFile>, Event& e, CUlibrary*, const char*, CUjit_option*, void**,
                    unsigned, CUlibraryOption*, void**, unsigned) {
  code_before(e, -1);
}
// Lazy loads: measured the first time per object and context only.
inline void prepare_lazy(Event& e, uint64_t object) {
  if (!first_use(object, e.context))
    e.drop = true;
  else
    code_before(e, -1);
}
inline void prepare(Op<HookId::cuLibraryGetModule>, Event& e, CUmodule*, CUlibrary l) { prepare_lazy(e, u(l)); }
inline void prepare(Op<HookId::cuKernelGetFunction>, Event& e, CUfunction*, CUkernel k) { prepare_lazy(e, u(k)); }

}  // namespace vt
