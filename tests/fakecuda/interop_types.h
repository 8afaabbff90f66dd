// interop_types.h — stand-ins for the window-system types that the GL, EGL and VDPAU entry
// points take (cudaGL.h, cudaEGL.h and cudaVDPAU.h include GL/gl.h, EGL/egl.h and
// vdpau/vdpau.h, which a CPU-only build machine need not have). The simulator models only the
// VDPAU context calls (api_interop.cpp); the rest it only has to export, hand out through
// cuGetProcAddress and answer CUDA_ERROR_NOT_SUPPORTED, so the types only have to be
// ABI-compatible with the real ones (integers as integers, handles as pointers, a by-value
// struct of the same size).
#pragma once

#include <cuda.h>

#include <cstdint>

// cuda.h defines the 32-bit device pointer of the old GL entry points only in its internal mode.
typedef unsigned int CUdeviceptr_v1;
typedef unsigned int GLuint;  // Khronos gl.h
typedef unsigned int GLenum;
typedef enum CUGLDeviceList_enum { CU_GL_DEVICE_LIST_ALL = 1 } CUGLDeviceList;  // cudaGL.h (an enum)
typedef void *EGLImageKHR;    // Khronos eglext.h: opaque pointers
typedef void *EGLStreamKHR;
typedef void *EGLSyncKHR;
typedef int32_t EGLint;       // khronos_int32_t
typedef struct CUeglStreamConnection_st *CUeglStreamConnection;  // cudaEGL.h
// cudaEGL.h's CUeglFrame: a union of three pointers, six unsigned ints and three enums.
typedef struct CUeglFrame_st {
  void *planes[3];
  unsigned int fields[9];
} CUeglFrame_v1;
static_assert(sizeof(CUeglFrame_v1) == 64, "CUeglFrame is passed by value: keep its size");
typedef uint32_t VdpDevice;   // vdpau.h: handles are 32-bit integers
typedef uint32_t VdpVideoSurface;
typedef uint32_t VdpOutputSurface;
typedef int VdpStatus;
typedef VdpStatus VdpGetProcAddress(VdpDevice device, uint32_t function_id, void **function_pointer);
