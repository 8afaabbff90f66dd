// api_array.cpp — CUDA arrays: cuArrayCreate_v2, cuArray3DCreate_v2, cuArrayDestroy, and
// mipmapped arrays: cuMipmappedArrayCreate, cuMipmappedArrayGetLevel, cuMipmappedArrayDestroy.
// An array holds no data here; it only takes the bytes its texels need (rounded to 512 B)
// of the current context's device, placed in the device's 2 MiB pages like cuMemAlloc. A
// mipmapped array takes the sum of its levels (each dimension halved per level, at least 1);
// its levels are arrays that belong to it (cuArrayDestroy refuses them). A sparse array or one
// with deferred mapping takes none (its tiles would be mapped from cuMemCreate memory).
#include "state.h"

#include <algorithm>

using namespace fc;

namespace {

// The bytes of w x h x d texels of format f; 0 for an unknown format. Bits per texel with all
// its channels (the ...X1/X2/X4 formats name their channels; the plain ones times `channels`),
// 4x4 blocks of 8 or 16 bytes for BCn, the planes of the YUV formats at their sampling.
Bytes data_bytes(CUarray_format f, unsigned channels, Bytes w, Bytes h, Bytes d) {
  Bytes bits = 0, block = 0;
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: bits = 8 * channels; break;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: bits = 16 * channels; break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: bits = 32 * channels; break;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1: bits = 8; break;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_NV16:
    case CU_AD_FORMAT_YUY2: bits = 16; break;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410: bits = 32; break;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
    case CU_AD_FORMAT_Y416: bits = 64; break;
    case CU_AD_FORMAT_NV12: bits = 12; break;
    case CU_AD_FORMAT_P010:
    case CU_AD_FORMAT_P016:
    case CU_AD_FORMAT_Y444_PLANAR8:
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar: bits = 24; break;
    case CU_AD_FORMAT_Y444_PLANAR10:
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar: bits = 48; break;
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM: block = 8; break;
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB: block = 16; break;
    default: return 0;
  }
  if (block) return ((w + 3) / 4) * ((h + 3) / 4) * d * block;
  return (w * h * d * bits + 7) / 8;
}

// `unbacked`: a sparse array or one with deferred mapping (CUDA_ARRAY3D_SPARSE /
// CUDA_ARRAY3D_DEFERRED_MAPPING), which takes no memory of its own.
CUresult create(CUarray *pHandle, size_t w, size_t h, size_t d, CUarray_format f, unsigned channels,
                bool unbacked = false) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pHandle || w == 0) return CUDA_ERROR_INVALID_VALUE;
  if (channels != 1 && channels != 2 && channels != 4) return CUDA_ERROR_INVALID_VALUE;
  if (data_bytes(f, channels, 1, 1, 1) == 0) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  h = h ? h : 1;
  d = d ? d : 1;
  constexpr Bytes kLimit = 1ull << 48;  // texels: at most 8 bytes each, no overflow below
  if (w > kLimit || h > kLimit || d > kLimit || w > kLimit / h || w * h > kLimit / d) return CUDA_ERROR_OUT_OF_MEMORY;
  const Bytes bytes = round_up(data_bytes(f, channels, w, h, d), kAllocRound);
  const int dev = s.ctxs[ctx].device;
  Device &dv = s.devices[dev];
  const CUdeviceptr va = unbacked ? 0 : dv.heap.alloc(s.va, &dv, bytes);
  if (!va && !unbacked) return CUDA_ERROR_OUT_OF_MEMORY;
  CUarray a = new_handle_as<CUarray>(s, 5);
  s.arrays[a] = Array{dev, va, ctx, nullptr};
  *pHandle = a;
  return CUDA_SUCCESS;
}

void free_array_memory(State &s, int device, CUdeviceptr va) {
  if (va) s.devices[device].heap.free(s.va, &s.devices[device], va);
}

// Frees a mipmapped array and its levels.
void destroy_mipmapped(State &s, std::map<CUmipmappedArray, MipmappedArray>::iterator it) {
  for (CUarray level : it->second.levels) s.arrays.erase(level);
  free_array_memory(s, it->second.device, it->second.va);
  s.mipmapped.erase(it);
}

}  // namespace

namespace fc {

void array_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.mipmapped.begin(); it != s.mipmapped.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx) destroy_mipmapped(s, it);
    it = next;
  }
  for (auto it = s.arrays.begin(); it != s.arrays.end();) {
    if (it->second.ctx == ctx) {
      free_array_memory(s, it->second.device, it->second.va);
      it = s.arrays.erase(it);
    } else {
      ++it;
    }
  }
}

CUresult mipmapped_create(State &s, CUcontext ctx, const CUDA_ARRAY3D_DESCRIPTOR &desc, unsigned levels,
                          bool counted, CUmipmappedArray *out) {
  if (desc.NumChannels != 1 && desc.NumChannels != 2 && desc.NumChannels != 4) return CUDA_ERROR_INVALID_VALUE;
  if (data_bytes(desc.Format, desc.NumChannels, 1, 1, 1) == 0 || desc.Width == 0 || levels == 0)
    return CUDA_ERROR_INVALID_VALUE;
  Bytes w = desc.Width, h = desc.Height ? desc.Height : 1, d = desc.Depth ? desc.Depth : 1;
  constexpr Bytes kLimit = 1ull << 24;  // the texture dimension limits are far below this
  if (w > kLimit || h > kLimit || d > kLimit) return CUDA_ERROR_INVALID_VALUE;
  unsigned max_levels = 1;
  for (Bytes m = std::max({w, h, d}); m > 1; m >>= 1) max_levels++;
  if (levels > max_levels) return CUDA_ERROR_INVALID_VALUE;
  Bytes bytes = 0;
  for (unsigned l = 0; l < levels; ++l)
    bytes += round_up(data_bytes(desc.Format, desc.NumChannels, std::max<Bytes>(w >> l, 1), std::max<Bytes>(h >> l, 1),
                                 std::max<Bytes>(d >> l, 1)),
                      kAllocRound);
  const int dev = s.ctxs[ctx].device;
  CUdeviceptr va = 0;
  if (counted) {
    Device &dv = s.devices[dev];
    va = dv.heap.alloc(s.va, &dv, bytes);
    if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUmipmappedArray m = new_handle_as<CUmipmappedArray>(s, 14);
  MipmappedArray &ma = s.mipmapped[m];
  ma.device = dev;
  ma.va = va;
  ma.ctx = ctx;
  for (unsigned l = 0; l < levels; ++l) {
    CUarray level = new_handle_as<CUarray>(s, 5);
    s.arrays[level] = Array{dev, 0, ctx, m};
    ma.levels.push_back(level);
  }
  *out = m;
  return CUDA_SUCCESS;
}

}  // namespace fc

FC_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
  // No descriptor: width 0, so create() answers NOT_INITIALIZED or INVALID_VALUE in order.
  if (!pAllocateArray) return create(pHandle, 0, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  const CUDA_ARRAY_DESCRIPTOR &a = *pAllocateArray;
  return create(pHandle, a.Width, a.Height, 0, a.Format, a.NumChannels);
}

FC_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
  if (!pAllocateArray) return create(pHandle, 0, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1);
  const CUDA_ARRAY3D_DESCRIPTOR &a = *pAllocateArray;
  return create(pHandle, a.Width, a.Height, a.Depth, a.Format, a.NumChannels,
                (a.Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) != 0);
}

FC_API CUresult cuArrayDestroy(CUarray hArray) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  auto it = s.arrays.find(hArray);
  if (it == s.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (it->second.level_of) return CUDA_ERROR_INVALID_VALUE;  // owned by its mipmapped array
  free_array_memory(s, it->second.device, it->second.va);
  s.arrays.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                       unsigned int numMipmapLevels) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pHandle || !pMipmappedArrayDesc) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  return mipmapped_create(s, ctx, *pMipmappedArrayDesc, numMipmapLevels, true, pHandle);
}

FC_API CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.mipmapped.find(hMipmappedArray);
  if (!pLevelArray || it == s.mipmapped.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (level >= it->second.levels.size()) return CUDA_ERROR_INVALID_VALUE;
  *pLevelArray = it->second.levels[level];
  return CUDA_SUCCESS;
}

FC_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.mipmapped.find(hMipmappedArray);
  if (it == s.mipmapped.end()) return CUDA_ERROR_INVALID_HANDLE;
  destroy_mipmapped(s, it);
  return CUDA_SUCCESS;
}
