// The CUDA driver API as the hooks see it: cuda.h plus the exported names cuda.h does not
// declare in a normal build (the _ptsz variants, the 4-argument v1 cuGetProcAddress, and the
// older graph and capture exports that cuda.h's macros hide).
// Types only: nothing here is linked; every real function is found at run time.
#pragma once

// cuCtxDetach is deprecated: hooking it is not using it.
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>

// cuda.h maps some names to newer exports; in vramtrace each name means its own export.
#include "cuda_export_names.h"

// The CUDA 2.x ABI's types, as cuda.h declares them for the driver's own build only
// (__CUDA_API_VERSION_INTERNAL): 32-bit device pointers, sizes and array extents.
typedef unsigned int vt_CUdeviceptr_v1;
struct vt_CUDA_ARRAY_DESCRIPTOR_v1 {
  unsigned int Width, Height;
  CUarray_format Format;
  unsigned int NumChannels;
};
struct vt_CUDA_ARRAY3D_DESCRIPTOR_v1 {
  unsigned int Width, Height, Depth;
  CUarray_format Format;
  unsigned int NumChannels, Flags;
};
#undef cuCtxCreate
#undef cuCtxDestroy

extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
// Graphs and stream capture: the older exports, and the _ptsz ones.
CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, CUgraphNodeParams* nodeParams);
CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize);
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream);
// The CUDA 2.x exports (and cuMemHostRegister, the 4.0 one: the current ABI).
CUresult cuMemAlloc(vt_CUdeviceptr_v1* dptr, unsigned int bytesize);
CUresult cuMemFree(vt_CUdeviceptr_v1 dptr);
CUresult cuMemAllocHost(void** pp, unsigned int bytesize);
CUresult cuMemAllocPitch(vt_CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes, unsigned int Height,
                         unsigned int ElementSizeBytes);
CUresult cuArrayCreate(CUarray* pHandle, const vt_CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray);
CUresult cuArray3DCreate(CUarray* pHandle, const vt_CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray);
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);
// Contexts: the older exports (cuda.h names only the newest), and the OpenGL ones (cudaGL.h
// would need GL's headers; the signature needs no GL type).
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
                        CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuGLCtxCreate(CUcontext* pCtx, unsigned int Flags, CUdevice device);
CUresult cuGLCtxCreate_v2(CUcontext* pCtx, unsigned int Flags, CUdevice device);
// The VDPAU ones: cudaVDPAU.h needs vdpau/vdpau.h; VdpDevice is a uint32_t there and
// VdpGetProcAddress a function type (only its pointer is passed on).
typedef uint32_t vt_VdpDevice;
typedef void vt_VdpGetProcAddress;
CUresult cuVDPAUCtxCreate(CUcontext* pCtx, unsigned int flags, CUdevice device, vt_VdpDevice vdpDevice,
                          vt_VdpGetProcAddress* vdpGetProcAddress);
CUresult cuVDPAUCtxCreate_v2(CUcontext* pCtx, unsigned int flags, CUdevice device, vt_VdpDevice vdpDevice,
                             vt_VdpGetProcAddress* vdpGetProcAddress);
}
