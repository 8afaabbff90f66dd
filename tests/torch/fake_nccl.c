/* A stand-in for NCCL: a library of the traced process that takes device memory straight from
 * the driver, outside PyTorch's allocator (built as libnccl.so.2, the name the report must give). */
#include <cuda.h>
#include <stdint.h>

__attribute__((visibility("default"))) int fake_nccl_reserve(uint64_t bytes) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return -1;
  return cuMemAlloc(&p, (size_t)bytes) == CUDA_SUCCESS ? 0 : -1;
}
