// api_array.cpp — CUDA arrays: cuArrayCreate_v2, cuArray3DCreate_v2, cuArrayDestroy, and
// mipmapped arrays: cuMipmappedArrayCreate, cuMipmappedArrayGetLevel, cuMipmappedArrayDestroy.
// An array holds no data here; it only takes width*height*depth*texel bytes (rounded to 512 B)
// of the current context's device, placed in the device's 2 MiB pages like cuMemAlloc. A
// mipmapped array takes the sum of its levels (each dimension halved per level, at least 1);
// its levels are arrays that belong to it (cuArrayDestroy refuses them).
#include "state.h"

#include <algorithm>

using namespace fc;

namespace {

// Bytes per texel, all channels included; 0 for an unknown format. Block-compressed and
// YUV formats are approximated (rounded up to whole bytes per texel).
Bytes texel_bytes(CUarray_format f, unsigned channels) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1 * channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2 * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4 * channels;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1: return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1: return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT_101010_2: return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4: return 8;
    default: return f >= 0x91 && f <= 0xb5 ? 4 : 0;  // BCn and YUV: at most 4 bytes/texel
  }
}

CUresult create(CUarray *pHandle, size_t w, size_t h, size_t d, CUarray_format f, unsigned channels) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pHandle || w == 0) return CUDA_ERROR_INVALID_VALUE;
  if (channels != 1 && channels != 2 && channels != 4) return CUDA_ERROR_INVALID_VALUE;
  const Bytes texel = texel_bytes(f, channels);
  if (texel == 0) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  h = h ? h : 1;
  d = d ? d : 1;
  constexpr Bytes kLimit = 1ull << 48;
  if (w > kLimit || h > kLimit || d > kLimit || w * texel > kLimit / h || w * texel * h > kLimit / d)
    return CUDA_ERROR_OUT_OF_MEMORY;
  const Bytes bytes = round_up(w * texel * h * d, kAllocRound);
  const int dev = s.ctxs[ctx].device;
  Device &dv = s.devices[dev];
  const CUdeviceptr va = dv.heap.alloc(s.va, &dv, bytes);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
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
  const Bytes texel = texel_bytes(desc.Format, desc.NumChannels);
  if (texel == 0 || desc.Width == 0 || levels == 0) return CUDA_ERROR_INVALID_VALUE;
  Bytes w = desc.Width, h = desc.Height ? desc.Height : 1, d = desc.Depth ? desc.Depth : 1;
  constexpr Bytes kLimit = 1ull << 24;  // the texture dimension limits are far below this
  if (w > kLimit || h > kLimit || d > kLimit) return CUDA_ERROR_INVALID_VALUE;
  unsigned max_levels = 1;
  for (Bytes m = std::max({w, h, d}); m > 1; m >>= 1) max_levels++;
  if (levels > max_levels) return CUDA_ERROR_INVALID_VALUE;
  Bytes bytes = 0;
  for (unsigned l = 0; l < levels; ++l)
    bytes += round_up(std::max<Bytes>(w >> l, 1) * std::max<Bytes>(h >> l, 1) * std::max<Bytes>(d >> l, 1) * texel,
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
  return create(pHandle, a.Width, a.Height, a.Depth, a.Format, a.NumChannels);
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
