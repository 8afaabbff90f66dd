// api_interop.cpp — the graphics-interop entry points that make contexts: cuVDPAUCtxCreate_v2
// and its CUDA 3.1 twin cuVDPAUCtxCreate (same ABI), and cuVDPAUGetDevice. Everything else of
// GL/EGL/VDPAU interop stays a stub (stubs_interop.cpp).
//
// Model (cudaVDPAU.h): cuVDPAUCtxCreate "creates a new CUDA context, initializes VDPAU
// interoperability, and associates the CUDA context with the calling thread" — here exactly a
// cuCtxCreate (its cost, FAKECUDA_CONTEXT_BYTES, made current, destroyed with cuCtxDestroy). The
// simulator has no VDPAU: any VdpDevice but VDP_INVALID_HANDLE stands for device 0's, and the
// VdpGetProcAddress pointer must be given but is never called.
#include "fc_api.h"
#include "interop_types.h"

namespace {

constexpr VdpDevice kVdpInvalidHandle = 0xffffffffu;  // vdpau.h's VDP_INVALID_HANDLE

CUresult vdpau_ctx_create(CUcontext *pCtx, unsigned int flags, CUdevice_v1 device, VdpDevice vdpDevice,
                          VdpGetProcAddress *vdpGetProcAddress) {
  if (!pCtx || !vdpGetProcAddress || vdpDevice == kVdpInvalidHandle) return CUDA_ERROR_INVALID_VALUE;
  return cuCtxCreate_v4(pCtx, nullptr, flags, device);
}

}  // namespace

FC_API CUresult cuVDPAUCtxCreate_v2(CUcontext *pCtx, unsigned int flags, CUdevice_v1 device, VdpDevice vdpDevice,
                                    VdpGetProcAddress *vdpGetProcAddress) {
  return vdpau_ctx_create(pCtx, flags, device, vdpDevice, vdpGetProcAddress);
}

FC_API CUresult cuVDPAUCtxCreate(CUcontext *pCtx, unsigned int flags, CUdevice_v1 device, VdpDevice vdpDevice,
                                 VdpGetProcAddress *vdpGetProcAddress) {
  return vdpau_ctx_create(pCtx, flags, device, vdpDevice, vdpGetProcAddress);
}

FC_API CUresult cuVDPAUGetDevice(CUdevice_v1 *pDevice, VdpDevice vdpDevice, VdpGetProcAddress *vdpGetProcAddress) {
  if (!pDevice || !vdpGetProcAddress || vdpDevice == kVdpInvalidHandle) return CUDA_ERROR_INVALID_VALUE;
  int count = 0;
  if (CUresult r = cuDeviceGetCount(&count)) return r;  // not initialized, no device
  if (count == 0) return CUDA_ERROR_NO_DEVICE;
  *pDevice = 0;
  return CUDA_SUCCESS;
}
