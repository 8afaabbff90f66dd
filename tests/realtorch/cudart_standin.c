/* cudart_standin.c — a stand-in libcudart.so.12 (CUDA 12.4 ABI) for running a real CUDA build of
 * PyTorch (Debian's python3-torch-cuda, tests/realtorch) on the simulated driver (tests/fakecuda),
 * on the CPU. The real libcudart refuses the simulated driver (it needs the driver's private export
 * tables), so this one stands in for the 83 functions PyTorch's libraries import (they are linked
 * BIND_NOW: every one must exist at load time), under the real library's symbol version.
 *
 * What it does, as the real runtime does it:
 *  - dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then every driver entry point it needs
 *    through cuGetProcAddress (so a tracer that hooks dlsym/cuGetProcAddress sees the usual path);
 *  - cuInit at the first call; the primary context of a device is retained once (cudaSetDevice, or
 *    the first call that needs a context) and made current per thread;
 *  - device memory (cudaMalloc/Free, cudaMallocAsync/FreeAsync and the default pool, host alloc and
 *    register, IPC, cudaMemGetInfo), streams, events and graphs are forwarded to the driver.
 * What it does not: run code. Kernel launches and fat-binary registration are accepted and do
 * nothing; device memory has no contents (the simulated driver's addresses are PROT_NONE), so a
 * copy to the host yields zeros and memset/copies to the device do nothing. Host-to-host copies are
 * real. cudaGetDeviceProperties is filled from the driver's attributes.
 *
 * VT_REALTORCH_CUDART_LOG=FILE appends the name of each runtime function the first time it is called.
 * Built by tests/realtorch/CMakeLists.txt (soname libcudart.so.12, cudart_standin.map).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- driver types (CUDA 12/13 ABI, only what is used) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUstream, *CUevent, *CUmemoryPool, *CUgraph, *CUgraphExec, *CUgraphNode;
typedef unsigned long long CUdeviceptr;
typedef struct { char bytes[16]; } CUuuid;
typedef struct { char reserved[64]; } CUipcMemHandle;

/* ---- runtime types (CUDA 12.4 ABI) ---- */
typedef int cudaError_t;
typedef void *cudaStream_t, *cudaEvent_t, *cudaMemPool_t, *cudaGraph_t, *cudaGraphExec_t,
    *cudaGraphNode_t;
typedef struct { unsigned x, y, z; } dim3;
typedef struct { char reserved[64]; } cudaIpcMemHandle_t, cudaIpcEventHandle_t;

struct cudaDeviceProp { /* CUDA 12.0-12.4 layout (driver_types.h), 1032 bytes */
  char name[256];
  CUuuid uuid;
  char luid[8];
  unsigned int luidDeviceNodeMask;
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment, texturePitchAlignment;
  int deviceOverlap, multiProcessorCount, kernelExecTimeoutEnabled, integrated, canMapHostMemory,
      computeMode, maxTexture1D, maxTexture1DMipmap, maxTexture1DLinear, maxTexture2D[2],
      maxTexture2DMipmap[2], maxTexture2DLinear[3], maxTexture2DGather[2], maxTexture3D[3],
      maxTexture3DAlt[3], maxTextureCubemap, maxTexture1DLayered[2], maxTexture2DLayered[3],
      maxTextureCubemapLayered[2], maxSurface1D, maxSurface2D[2], maxSurface3D[3],
      maxSurface1DLayered[2], maxSurface2DLayered[3], maxSurfaceCubemap,
      maxSurfaceCubemapLayered[2];
  size_t surfaceAlignment;
  int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver,
      asyncEngineCount, unifiedAddressing, memoryClockRate, memoryBusWidth, l2CacheSize,
      persistingL2CacheMaxSize, maxThreadsPerMultiProcessor, streamPrioritiesSupported,
      globalL1CacheSupported, localL1CacheSupported;
  size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID,
      hostNativeAtomicSupported, singleToDoublePrecisionPerfRatio, pageableMemoryAccess,
      concurrentManagedAccess, computePreemptionSupported, canUseHostPointerForRegisteredMem,
      cooperativeLaunch, cooperativeMultiDeviceLaunch;
  size_t sharedMemPerBlockOptin;
  int pageableMemoryAccessUsesHostPageTables, directManagedMemAccessFromHost,
      maxBlocksPerMultiProcessor, accessPolicyMaxWindowSize;
  size_t reservedSharedMemPerBlock;
  int hostRegisterSupported, sparseCudaArraySupported, hostRegisterReadOnlySupported,
      timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported;
  unsigned int gpuDirectRDMAFlushWritesOptions;
  int gpuDirectRDMAWritesOrdering;
  unsigned int memoryPoolSupportedHandleTypes;
  int deferredMappingCudaArraySupported, ipcEventSupported, clusterLaunch, unifiedFunctionPointers,
      reserved2[2], reserved1[1], reserved[60];
};
_Static_assert(sizeof(struct cudaDeviceProp) == 1032, "CUDA 12.4 cudaDeviceProp is 1032 bytes");

struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA,
      maxDynamicSharedSizeBytes, preferredShmemCarveout, clusterDimMustBeSet, requiredClusterWidth,
      requiredClusterHeight, requiredClusterDepth, clusterSchedulingPolicyPreference,
      nonPortableClusterSizeAllowed, reserved[16];
};
struct cudaPointerAttributes { int type; int device; void *devicePointer, *hostPointer; };

enum {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3, cudaErrorInsufficientDriver = 35, cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101, cudaErrorNotSupported = 801, cudaErrorUnknown = 999,
};
enum { CUDA_SUCCESS = 0, CUDA_ERROR_OUT_OF_MEMORY = 2 };
enum { HtoH = 0, HtoD = 1, DtoH = 2, DtoD = 3, MemcpyDefault = 4 };
enum { CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9 };

/* ---- the driver entry points, fetched through cuGetProcAddress ---- */
#define DRIVER_FUNCS(X)                                                                           \
  X(cuInit, 12040, CUresult, (unsigned))                                                           \
  X(cuDriverGetVersion, 12040, CUresult, (int *))                                                  \
  X(cuDeviceGetCount, 12040, CUresult, (int *))                                                    \
  X(cuDeviceGetName, 12040, CUresult, (char *, int, CUdevice))                                     \
  X(cuDeviceTotalMem, 12040, CUresult, (size_t *, CUdevice))                                       \
  X(cuDeviceGetAttribute, 12040, CUresult, (int *, int, CUdevice))                                 \
  X(cuDeviceGetUuid, 12040, CUresult, (CUuuid *, CUdevice))                                       \
  X(cuDevicePrimaryCtxRetain, 12040, CUresult, (CUcontext *, CUdevice))                            \
  X(cuCtxSetCurrent, 12040, CUresult, (CUcontext))                                                 \
  X(cuCtxGetCurrent, 12040, CUresult, (CUcontext *))                                               \
  X(cuCtxSynchronize, 12040, CUresult, (void))                                                     \
  X(cuMemAlloc, 12040, CUresult, (CUdeviceptr *, size_t))                                          \
  X(cuMemFree, 12040, CUresult, (CUdeviceptr))                                                     \
  X(cuMemGetInfo, 12040, CUresult, (size_t *, size_t *))                                           \
  X(cuMemHostAlloc, 12040, CUresult, (void **, size_t, unsigned))                                  \
  X(cuMemFreeHost, 12040, CUresult, (void *))                                                      \
  X(cuMemHostRegister, 12040, CUresult, (void *, size_t, unsigned))                                \
  X(cuMemHostUnregister, 12040, CUresult, (void *))                                                \
  X(cuMemHostGetDevicePointer, 12040, CUresult, (CUdeviceptr *, void *, unsigned))                 \
  X(cuMemAllocAsync, 12040, CUresult, (CUdeviceptr *, size_t, CUstream))                          \
  X(cuMemFreeAsync, 12040, CUresult, (CUdeviceptr, CUstream))                                     \
  X(cuDeviceGetDefaultMemPool, 12040, CUresult, (CUmemoryPool *, CUdevice))                       \
  X(cuMemPoolGetAttribute, 12040, CUresult, (CUmemoryPool, int, void *))                          \
  X(cuMemPoolSetAttribute, 12040, CUresult, (CUmemoryPool, int, void *))                          \
  X(cuMemPoolSetAccess, 12040, CUresult, (CUmemoryPool, const void *, size_t))                    \
  X(cuMemPoolTrimTo, 12040, CUresult, (CUmemoryPool, size_t))                                     \
  X(cuPointerGetAttribute, 12040, CUresult, (void *, int, CUdeviceptr))                            \
  X(cuIpcGetMemHandle, 12040, CUresult, (CUipcMemHandle *, CUdeviceptr))                           \
  X(cuIpcOpenMemHandle, 12040, CUresult, (CUdeviceptr *, CUipcMemHandle, unsigned))               \
  X(cuIpcCloseMemHandle, 12040, CUresult, (CUdeviceptr))                                           \
  X(cuStreamCreate, 12040, CUresult, (CUstream *, unsigned))                                       \
  X(cuStreamCreateWithPriority, 12040, CUresult, (CUstream *, unsigned, int))                      \
  X(cuStreamDestroy, 12040, CUresult, (CUstream))                                                  \
  X(cuStreamSynchronize, 12040, CUresult, (CUstream))                                              \
  X(cuStreamQuery, 12040, CUresult, (CUstream))                                                    \
  X(cuStreamWaitEvent, 12040, CUresult, (CUstream, CUevent, unsigned))                             \
  X(cuStreamBeginCapture, 12040, CUresult, (CUstream, int))                                       \
  X(cuStreamEndCapture, 12040, CUresult, (CUstream, CUgraph *))                                   \
  X(cuStreamIsCapturing, 12040, CUresult, (CUstream, int *))                                      \
  X(cuStreamGetCaptureInfo, 11030, CUresult,                                                      \
    (CUstream, int *, unsigned long long *, CUgraph *, const CUgraphNode **, size_t *))           \
  X(cuThreadExchangeStreamCaptureMode, 12040, CUresult, (int *))                                  \
  X(cuEventCreate, 12040, CUresult, (CUevent *, unsigned))                                         \
  X(cuEventRecord, 12040, CUresult, (CUevent, CUstream))                                           \
  X(cuEventQuery, 12040, CUresult, (CUevent))                                                      \
  X(cuEventSynchronize, 12040, CUresult, (CUevent))                                                \
  X(cuEventElapsedTime, 12040, CUresult, (float *, CUevent, CUevent))                              \
  X(cuEventDestroy, 12040, CUresult, (CUevent))                                                    \
  X(cuGraphInstantiateWithFlags, 12040, CUresult, (CUgraphExec *, CUgraph, unsigned long long))   \
  X(cuGraphLaunch, 12040, CUresult, (CUgraphExec, CUstream))                                      \
  X(cuGraphDestroy, 12040, CUresult, (CUgraph))                                                   \
  X(cuGraphExecDestroy, 12040, CUresult, (CUgraphExec))                                           \
  X(cuGraphGetNodes, 12040, CUresult, (CUgraph, CUgraphNode *, size_t *))

#define DECLARE(name, ver, ret, params) static ret(*p_##name) params;
DRIVER_FUNCS(DECLARE)

/* ---- bookkeeping ---- */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaSuccess;
static int device_count;
#define MAX_DEVICES 64
static CUcontext primary[MAX_DEVICES];
static pthread_mutex_t primary_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int tls_device = -1; /* the runtime's current device of this thread (-1: not set) */
static __thread CUcontext tls_bound;  /* the context this runtime made current on this thread */
static __thread cudaError_t tls_last_error;
static int log_fd = -2;

static void log_call(const char *name, int *seen) {
  if (__atomic_exchange_n(seen, 1, __ATOMIC_RELAXED)) return;
  if (log_fd == -2) {
    const char *p = getenv("VT_REALTORCH_CUDART_LOG");
    log_fd = p && *p ? open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }
  if (log_fd >= 0) {
    char line[160];
    int n = snprintf(line, sizeof line, "%s\n", name);
    if (write(log_fd, line, (size_t)n) < 0) { /* nothing to do */ }
  }
}
#define ENTER() static int seen_; log_call(__func__, &seen_)

static cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}
/* CUresult and cudaError_t agree on every code this stand-in passes on (1, 2, 3, 4, 100, 101, 201,
 * 400, 500, 600, 801, 900-908: the runtime's enum was laid over the driver's). */
static cudaError_t from_cu(CUresult r) { return set_error(r); }

static void driver_init(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) { init_error = cudaErrorInsufficientDriver; return; }
  typedef CUresult (*gpa_t)(const char *, void **, int, unsigned long long, int *);
  gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
  if (!gpa) { init_error = cudaErrorInsufficientDriver; return; }
  /* `ver`: the CUDA version asked for, 12040 (what this runtime was built for) except where a newer
   * variant changed the signature below that version (cuStreamGetCaptureInfo: 12.3 added _v3). */
#define FETCH(name, ver, ret, params)                                          \
  {                                                                            \
    int status = 0;                                                            \
    if (gpa(#name, (void **)&p_##name, ver, 0, &status) != 0) p_##name = NULL; \
  }
  DRIVER_FUNCS(FETCH)
  if (!p_cuInit || p_cuInit(0) != CUDA_SUCCESS) { init_error = cudaErrorNoDevice; return; }
  if (p_cuDeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0) {
    device_count = 0;
    init_error = cudaErrorNoDevice;
  }
  if (device_count > MAX_DEVICES) device_count = MAX_DEVICES;
}
static cudaError_t init(void) {
  pthread_once(&init_once, driver_init);
  return init_error;
}
static int current_device(void) { return tls_device < 0 ? 0 : tls_device; }

/* The primary context of the thread's device made current on this thread (what the runtime does
 * before any call that needs a context). */
static cudaError_t ensure_ctx(void) {
  cudaError_t e = init();
  if (e) return set_error(e);
  int dev = current_device();
  pthread_mutex_lock(&primary_mu);
  CUresult r = 0;
  if (!primary[dev]) r = p_cuDevicePrimaryCtxRetain(&primary[dev], dev);
  CUcontext ctx = primary[dev];
  pthread_mutex_unlock(&primary_mu);
  if (r) return from_cu(r);
  if (tls_bound != ctx) {
    CUcontext cur = NULL;
    p_cuCtxGetCurrent(&cur);
    if (cur != ctx && (r = p_cuCtxSetCurrent(ctx))) return from_cu(r);
    tls_bound = ctx;
  }
  return cudaSuccess;
}
#define CTX()                          \
  do {                                 \
    cudaError_t e_ = ensure_ctx();     \
    if (e_) return e_;                 \
  } while (0)
#define FWD(call) return from_cu(call)

/* ---- device management ---- */
cudaError_t cudaGetDeviceCount(int *count) {
  ENTER();
  if (!count) return set_error(cudaErrorInvalidValue);
  cudaError_t e = init();
  *count = e ? 0 : device_count;
  return set_error(e);
}
cudaError_t cudaGetDevice(int *device) {
  ENTER();
  if (!device) return set_error(cudaErrorInvalidValue);
  *device = current_device();
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  ENTER();
  cudaError_t e = init();
  if (e) return set_error(e);
  if (device < 0 || device >= device_count) return set_error(cudaErrorInvalidDevice);
  tls_device = device;
  return ensure_ctx(); /* CUDA 12: cudaSetDevice initializes the primary context */
}
cudaError_t cudaSetDeviceFlags(unsigned flags) { ENTER(); (void)flags; return cudaSuccess; }
cudaError_t cudaGetDeviceFlags(unsigned *flags) { ENTER(); if (flags) *flags = 0; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { ENTER(); CTX(); FWD(p_cuCtxSynchronize()); }
cudaError_t cudaDeviceReset(void) { ENTER(); return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) {
  ENTER();
  if (!v) return set_error(cudaErrorInvalidValue);
  *v = 0;
  pthread_once(&init_once, driver_init);
  if (!p_cuDriverGetVersion) return cudaSuccess; /* no driver: 0, as the real runtime says */
  FWD(p_cuDriverGetVersion(v));
}
cudaError_t cudaRuntimeGetVersion(int *v) {
  ENTER();
  if (!v) return set_error(cudaErrorInvalidValue);
  *v = 12040;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device) {
  ENTER();
  cudaError_t e = init();
  if (e) return set_error(e);
  if (device < 0 || device >= device_count) return set_error(cudaErrorInvalidDevice);
  FWD(p_cuDeviceGetAttribute(value, attr, device)); /* cudaDeviceAttr == CUdevice_attribute */
}
static int attr(int a, int dev) {
  int v = 0;
  p_cuDeviceGetAttribute(&v, a, dev);
  return v;
}
cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *p, int dev) {
  ENTER();
  cudaError_t e = init();
  if (e) return set_error(e);
  if (!p) return set_error(cudaErrorInvalidValue);
  if (dev < 0 || dev >= device_count) return set_error(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  p_cuDeviceGetName(p->name, sizeof p->name, dev);
  if (p_cuDeviceGetUuid) p_cuDeviceGetUuid(&p->uuid, dev);
  p_cuDeviceTotalMem(&p->totalGlobalMem, dev);
  /* CUdevice_attribute numbers (cuda.h) */
  p->sharedMemPerBlock = (size_t)attr(8, dev);
  p->regsPerBlock = attr(12, dev);
  p->warpSize = attr(10, dev);
  p->memPitch = (size_t)attr(11, dev);
  p->maxThreadsPerBlock = attr(1, dev);
  for (int i = 0; i < 3; i++) p->maxThreadsDim[i] = attr(2 + i, dev), p->maxGridSize[i] = attr(5 + i, dev);
  p->clockRate = attr(13, dev);
  p->totalConstMem = (size_t)attr(9, dev);
  p->major = attr(75, dev);
  p->minor = attr(76, dev);
  p->textureAlignment = (size_t)attr(14, dev);
  p->texturePitchAlignment = (size_t)attr(51, dev);
  p->deviceOverlap = 1;
  p->multiProcessorCount = attr(16, dev);
  p->canMapHostMemory = attr(19, dev);
  p->concurrentKernels = attr(31, dev);
  p->ECCEnabled = attr(32, dev);
  p->pciBusID = attr(33, dev);
  p->asyncEngineCount = attr(40, dev);
  p->unifiedAddressing = attr(41, dev);
  p->memoryClockRate = attr(36, dev);
  p->memoryBusWidth = attr(37, dev);
  p->l2CacheSize = attr(38, dev);
  p->maxThreadsPerMultiProcessor = attr(39, dev);
  p->streamPrioritiesSupported = attr(78, dev);
  p->globalL1CacheSupported = p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = (size_t)attr(81, dev);
  p->regsPerMultiprocessor = attr(82, dev);
  p->managedMemory = attr(83, dev);
  p->concurrentManagedAccess = attr(89, dev);
  p->cooperativeLaunch = attr(95, dev);
  p->sharedMemPerBlockOptin = (size_t)attr(97, dev);
  p->maxBlocksPerMultiProcessor = attr(106, dev);
  p->hostRegisterSupported = attr(99, dev);
  p->memoryPoolsSupported = attr(115, dev);
  p->memoryPoolSupportedHandleTypes = (unsigned)attr(119, dev);
  p->ipcEventSupported = attr(123, dev);
  p->reservedSharedMemPerBlock = 1024;
  p->accessPolicyMaxWindowSize = 134213632;
  p->persistingL2CacheMaxSize = 82837504;
  p->computePreemptionSupported = 1;
  p->clusterLaunch = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
  ENTER();
  return cudaGetDeviceProperties_v2(p, dev);
}
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev) {
  ENTER();
  cudaError_t e = init();
  if (e) return set_error(e);
  if (!id || len <= 0 || dev < 0 || dev >= device_count) return set_error(cudaErrorInvalidValue);
  snprintf(id, (size_t)len, "0000:%02x:00.0", attr(33, dev));
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
  ENTER();
  if (least) *least = 0; /* an H100/H200's range */
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
  ENTER();
  if (!can) return set_error(cudaErrorInvalidValue);
  *can = dev != peer;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags) { ENTER(); (void)peer; (void)flags; return cudaSuccess; }
cudaError_t cudaDeviceGetLimit(size_t *v, int limit) { ENTER(); (void)limit; if (v) *v = 0; return cudaSuccess; }
cudaError_t cudaDeviceSetLimit(int limit, size_t v) { ENTER(); (void)limit; (void)v; return cudaSuccess; }

/* ---- errors ---- */
cudaError_t cudaGetLastError(void) {
  ENTER();
  cudaError_t e = tls_last_error;
  tls_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { ENTER(); return tls_last_error; }
static const struct { int code; const char *name, *text; } errors[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {4, "cudaErrorCudartUnloading", "driver shutting down"},
    {35, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {201, "cudaErrorDeviceUninitialized", "invalid device context"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {500, "cudaErrorSymbolNotFound", "named symbol not found"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {704, "cudaErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {712, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {713, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {800, "cudaErrorNotPermitted", "operation not permitted"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {900, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {901, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {906, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
    {999, "cudaErrorUnknown", "unknown error"},
};
const char *cudaGetErrorName(cudaError_t e) {
  ENTER();
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == e) return errors[i].name;
  return "cudaErrorUnknown";
}
const char *cudaGetErrorString(cudaError_t e) {
  ENTER();
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == e) return errors[i].text;
  return "unrecognized error code";
}

/* ---- memory ---- */
cudaError_t cudaMalloc(void **p, size_t size) {
  ENTER();
  if (!p) return set_error(cudaErrorInvalidValue);
  CTX();
  *p = NULL;
  if (size == 0) return cudaSuccess;
  CUdeviceptr d = 0;
  CUresult r = p_cuMemAlloc(&d, size);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return set_error(cudaErrorMemoryAllocation);
  if (r) return from_cu(r);
  *p = (void *)(uintptr_t)d;
  return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
  ENTER();
  CTX();
  if (!p) return cudaSuccess; /* cudaFree(0): the classic "initialize the context" call */
  FWD(p_cuMemFree((CUdeviceptr)(uintptr_t)p));
}
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b) { ENTER(); CTX(); FWD(p_cuMemGetInfo(free_b, total_b)); }
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned flags) { ENTER(); CTX(); FWD(p_cuMemHostAlloc(p, size, flags)); }
cudaError_t cudaMallocHost(void **p, size_t size) { ENTER(); CTX(); FWD(p_cuMemHostAlloc(p, size, 0)); }
cudaError_t cudaFreeHost(void *p) { ENTER(); CTX(); FWD(p_cuMemFreeHost(p)); }
cudaError_t cudaHostRegister(void *p, size_t size, unsigned flags) { ENTER(); CTX(); FWD(p_cuMemHostRegister(p, size, flags)); }
cudaError_t cudaHostUnregister(void *p) { ENTER(); CTX(); FWD(p_cuMemHostUnregister(p)); }
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned flags) {
  ENTER();
  CTX();
  FWD(p_cuMemHostGetDevicePointer((CUdeviceptr *)d, h, flags));
}
static int is_device_ptr(const void *p, int *dev) {
  int ordinal = -1;
  if (!p || !p_cuPointerGetAttribute) return 0;
  if (p_cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)(uintptr_t)p)) return 0;
  if (dev) *dev = ordinal;
  return 1;
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
  ENTER();
  if (!a) return set_error(cudaErrorInvalidValue);
  CTX();
  int dev = -1;
  memset(a, 0, sizeof *a);
  if (is_device_ptr(p, &dev)) {
    a->type = 2; /* cudaMemoryTypeDevice */
    a->device = dev;
    a->devicePointer = (void *)p;
  } else {
    a->type = 0; /* unregistered (pinned host memory is not told apart here) */
    a->device = -2;
    a->hostPointer = (void *)p;
  }
  return cudaSuccess;
}
/* Copies: device memory has no contents. What reaches the host from the device is zeros. */
static cudaError_t copy(void *dst, const void *src, size_t n, int kind) {
  CTX();
  if (kind == MemcpyDefault) {
    int d = is_device_ptr(dst, NULL), s = is_device_ptr(src, NULL);
    kind = d ? (s ? DtoD : HtoD) : (s ? DtoH : HtoH);
  }
  if (kind == HtoH) memmove(dst, src, n);
  else if (kind == DtoH) memset(dst, 0, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind) { ENTER(); return copy(dst, src, n, kind); }
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s) {
  ENTER();
  (void)s;
  return copy(dst, src, n, kind);
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s) {
  ENTER();
  (void)dst; (void)dd; (void)src; (void)sd; (void)n; (void)s;
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                              int kind, cudaStream_t s) {
  ENTER();
  (void)s;
  CTX();
  if (kind == HtoH)
    for (size_t i = 0; i < h; i++) memmove((char *)dst + i * dp, (const char *)src + i * sp, w);
  else if (kind == DtoH)
    for (size_t i = 0; i < h; i++) memset((char *)dst + i * dp, 0, w);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) { ENTER(); (void)p; (void)v; (void)n; CTX(); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  ENTER();
  (void)p; (void)v; (void)n; (void)s;
  CTX();
  return cudaSuccess;
}

/* ---- stream-ordered allocator ---- */
cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s) {
  ENTER();
  if (!p) return set_error(cudaErrorInvalidValue);
  CTX();
  CUdeviceptr d = 0;
  CUresult r = p_cuMemAllocAsync(&d, size, s);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return set_error(cudaErrorMemoryAllocation);
  if (r) return from_cu(r);
  *p = (void *)(uintptr_t)d;
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { ENTER(); CTX(); FWD(p_cuMemFreeAsync((CUdeviceptr)(uintptr_t)p, s)); }
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev) {
  ENTER();
  CTX();
  FWD(p_cuDeviceGetDefaultMemPool(pool, dev));
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, int a, void *v) { ENTER(); CTX(); FWD(p_cuMemPoolGetAttribute(pool, a, v)); }
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, int a, void *v) { ENTER(); CTX(); FWD(p_cuMemPoolSetAttribute(pool, a, v)); }
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const void *desc, size_t n) {
  ENTER();
  CTX();
  FWD(p_cuMemPoolSetAccess(pool, desc, n)); /* cudaMemAccessDesc == CUmemAccessDesc */
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) { ENTER(); CTX(); FWD(p_cuMemPoolTrimTo(pool, keep)); }

/* ---- IPC ---- */
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p) {
  ENTER();
  CTX();
  FWD(p_cuIpcGetMemHandle((CUipcMemHandle *)h, (CUdeviceptr)(uintptr_t)p));
}
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned flags) {
  ENTER();
  CTX();
  CUipcMemHandle ch;
  memcpy(&ch, &h, sizeof ch);
  FWD(p_cuIpcOpenMemHandle((CUdeviceptr *)p, ch, flags));
}
cudaError_t cudaIpcCloseMemHandle(void *p) { ENTER(); CTX(); FWD(p_cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)p)); }
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *h, cudaEvent_t e) { ENTER(); (void)h; (void)e; return set_error(cudaErrorNotSupported); }
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *e, cudaIpcEventHandle_t h) { ENTER(); (void)e; (void)h; return set_error(cudaErrorNotSupported); }

/* ---- streams and events (the driver's: nothing executes, everything is complete) ---- */
cudaError_t cudaStreamCreate(cudaStream_t *s) { ENTER(); CTX(); FWD(p_cuStreamCreate(s, 0)); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { ENTER(); CTX(); FWD(p_cuStreamCreate(s, f)); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned f, int prio) {
  ENTER();
  CTX();
  FWD(p_cuStreamCreateWithPriority(s, f, prio));
}
cudaError_t cudaStreamGetPriority(cudaStream_t s, int *prio) { ENTER(); (void)s; if (prio) *prio = 0; return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { ENTER(); CTX(); FWD(p_cuStreamDestroy(s)); }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { ENTER(); CTX(); FWD(p_cuStreamSynchronize(s)); }
cudaError_t cudaStreamQuery(cudaStream_t s) { ENTER(); CTX(); FWD(p_cuStreamQuery(s)); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { ENTER(); CTX(); FWD(p_cuStreamWaitEvent(s, e, f)); }
cudaError_t cudaEventCreate(cudaEvent_t *e) { ENTER(); CTX(); FWD(p_cuEventCreate(e, 0)); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { ENTER(); CTX(); FWD(p_cuEventCreate(e, f)); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { ENTER(); CTX(); FWD(p_cuEventRecord(e, s)); }
cudaError_t cudaEventQuery(cudaEvent_t e) { ENTER(); CTX(); FWD(p_cuEventQuery(e)); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { ENTER(); CTX(); FWD(p_cuEventSynchronize(e)); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { ENTER(); CTX(); FWD(p_cuEventElapsedTime(ms, a, b)); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { ENTER(); CTX(); FWD(p_cuEventDestroy(e)); }
typedef void (*host_fn_t)(void *);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, host_fn_t fn, void *data) {
  ENTER();
  (void)s;
  if (fn) fn(data); /* the stream is always idle: run it now */
  return cudaSuccess;
}
typedef void (*stream_cb_t)(cudaStream_t, cudaError_t, void *);
cudaError_t cudaStreamAddCallback(cudaStream_t s, stream_cb_t cb, void *data, unsigned f) {
  ENTER();
  (void)f;
  if (cb) cb(s, cudaSuccess, data);
  return cudaSuccess;
}

/* ---- capture and graphs (forwarded: the simulated driver models capture) ---- */
cudaError_t cudaStreamBeginCapture(cudaStream_t s, int mode) { ENTER(); CTX(); FWD(p_cuStreamBeginCapture(s, mode)); }
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) { ENTER(); CTX(); FWD(p_cuStreamEndCapture(s, g)); }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, int *status) { ENTER(); CTX(); FWD(p_cuStreamIsCapturing(s, status)); }
cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t s, int *status, unsigned long long *id,
                                        cudaGraph_t *g, const cudaGraphNode_t **deps, size_t *n) {
  ENTER();
  CTX();
  FWD(p_cuStreamGetCaptureInfo(s, status, id, g, (const CUgraphNode **)deps, n));
}
cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode) { ENTER(); FWD(p_cuThreadExchangeStreamCaptureMode(mode)); }
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags) {
  ENTER();
  CTX();
  FWD(p_cuGraphInstantiateWithFlags(x, g, flags));
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags) {
  ENTER();
  CTX();
  FWD(p_cuGraphInstantiateWithFlags(x, g, flags));
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) { ENTER(); CTX(); FWD(p_cuGraphLaunch(x, s)); }
cudaError_t cudaGraphDestroy(cudaGraph_t g) { ENTER(); CTX(); FWD(p_cuGraphDestroy(g)); }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) { ENTER(); CTX(); FWD(p_cuGraphExecDestroy(x)); }
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n) { ENTER(); CTX(); FWD(p_cuGraphGetNodes(g, nodes, n)); }
cudaError_t cudaGraphDebugDotPrint(cudaGraph_t g, const char *path, unsigned flags) {
  ENTER();
  (void)g; (void)flags;
  FILE *f = fopen(path, "w");
  if (f) { fputs("digraph standin {}\n", f); fclose(f); }
  return cudaSuccess;
}

/* ---- kernels: accepted, never run ---- */
static void *fatbin_handles[1];
void **__cudaRegisterFatBinary(void *fatCubin) { ENTER(); (void)fatCubin; return fatbin_handles; }
void __cudaRegisterFatBinaryEnd(void **h) { ENTER(); (void)h; }
void __cudaUnregisterFatBinary(void **h) { ENTER(); (void)h; }
void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName,
                            int threadLimit, void *tid, void *bid, void *bDim, void *gDim, int *wSize) {
  ENTER();
  (void)h; (void)hostFun; (void)deviceFun; (void)deviceName; (void)threadLimit; (void)tid;
  (void)bid; (void)bDim; (void)gDim; (void)wSize;
}
void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global) {
  ENTER();
  (void)h; (void)hostVar; (void)deviceAddress; (void)deviceName; (void)ext; (void)size;
  (void)constant; (void)global;
}
static __thread struct { dim3 grid, block; size_t shmem; void *stream; } call_config[16];
static __thread int call_depth;
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, void *stream) {
  ENTER();
  if (call_depth < 16) {
    call_config[call_depth].grid = grid;
    call_config[call_depth].block = block;
    call_config[call_depth].shmem = shmem;
    call_config[call_depth].stream = stream;
  }
  call_depth++;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream) {
  ENTER();
  if (call_depth <= 0) return cudaErrorUnknown;
  call_depth--;
  int i = call_depth < 16 ? call_depth : 15;
  if (grid) *grid = call_config[i].grid;
  if (block) *block = call_config[i].block;
  if (shmem) *shmem = call_config[i].shmem;
  if (stream) *(void **)stream = call_config[i].stream;
  return cudaSuccess;
}
static int launches_counted = -1;
static unsigned long long launches;
static void count_launch(void) {
  if (launches_counted < 0) launches_counted = getenv("VT_REALTORCH_COUNT_LAUNCHES") != NULL;
  if (launches_counted) __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
}
__attribute__((destructor)) static void report_launches(void) {
  if (launches_counted > 0) fprintf(stderr, "stand-in cudart: %llu kernel launches (none ran)\n", launches);
}
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem,
                             cudaStream_t s) {
  ENTER();
  (void)func; (void)grid; (void)block; (void)args; (void)shmem; (void)s;
  CTX(); /* a launch binds the primary context to the thread, as the real runtime's does */
  count_launch();
  return cudaSuccess;
}
cudaError_t cudaLaunchKernelExC(const void *config, const void *func, void **args) {
  ENTER();
  (void)config; (void)func; (void)args;
  CTX();
  count_launch();
  return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *func) {
  ENTER();
  (void)func;
  if (!a) return set_error(cudaErrorInvalidValue);
  CTX();
  memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = a->binaryVersion = 90;
  a->maxDynamicSharedSizeBytes = 49152;
  a->preferredShmemCarveout = -1;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, int a, int v) { ENTER(); (void)func; (void)a; (void)v; return cudaSuccess; }
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *func,
                                                                   int blockSize, size_t shmem,
                                                                   unsigned flags) {
  ENTER();
  (void)func; (void)shmem; (void)flags;
  if (!n) return set_error(cudaErrorInvalidValue);
  *n = blockSize > 0 ? (2048 / blockSize > 32 ? 32 : 2048 / blockSize) : 0;
  if (*n < 1) *n = 1;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func, int blockSize, size_t shmem) {
  ENTER();
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, func, blockSize, shmem, 0);
}

/* ---- profiler ---- */
cudaError_t cudaProfilerStart(void) { ENTER(); return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { ENTER(); return cudaSuccess; }

/* ---- the driver's entry points through the runtime (CUDA 12 signature) ---- */
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, int *status) {
  ENTER();
  cudaError_t e = init();
  if (e) return set_error(e);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  typedef CUresult (*gpa_t)(const char *, void **, int, unsigned long long, int *);
  gpa_t gpa = h ? (gpa_t)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (!gpa) return set_error(cudaErrorNotSupported);
  FWD(gpa(symbol, fn, 12040, flags, status));
}
