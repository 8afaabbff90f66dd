// api_array.cpp — CUDA arrays: cuArrayCreate_v2, cuArray3DCreate_v2, cuArrayDestroy.
// An array holds no data here; it only counts width*height*depth*texel bytes against the
// current context's device.
#include "state.h"

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
  if (CUresult r = charge(s.devices[dev], bytes)) return r;
  CUarray a = reinterpret_cast<CUarray>(new_handle(s, 5));
  s.arrays[a] = Array{dev, bytes, ctx};
  *pHandle = a;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fc {

void array_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.arrays.begin(); it != s.arrays.end();) {
    if (it->second.ctx == ctx) {
      uncharge(s.devices[it->second.device], it->second.charged);
      it = s.arrays.erase(it);
    } else {
      ++it;
    }
  }
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
  uncharge(s.devices[it->second.device], it->second.charged);
  s.arrays.erase(it);
  return CUDA_SUCCESS;
}
