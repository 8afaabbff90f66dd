// CUDA arrays of every family of formats, on the simulated driver, linked with -lcuda
// (tests/e2e/array_test.cpp): for each array the change of cuMemGetInfo's free memory it caused
// (the simulator's own model of the bytes a format takes), printed as "name bytes" lines, then
// every array stays live (the trace's sizes are compared one by one, and their sum with the peak).
// Extents are chosen so that each array is a whole number of the device's 2 MiB pages.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "array_formats: %s failed: %d\n", what, int(r));
    exit(1);
  }
}

size_t free_now() {
  size_t f = 0, t = 0;
  check(cuMemGetInfo(&f, &t), "cuMemGetInfo");
  return f;
}

void array3d(const char* name, size_t w, size_t h, size_t d, CUarray_format f, unsigned channels,
             unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR desc = {};
  desc.Width = w;
  desc.Height = h;
  desc.Depth = d;
  desc.Format = f;
  desc.NumChannels = channels;
  desc.Flags = flags;
  size_t before = free_now();
  CUarray a;
  check(cuArray3DCreate(&a, &desc), name);
  printf("%s %zu\n", name, before - free_now());
}

}  // namespace

int main() {
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  array3d("float4", 512, 512, 4, CU_AD_FORMAT_FLOAT, 4);             // 16 B a texel: 16 MiB
  array3d("unorm8x4", 512, 512, 16, CU_AD_FORMAT_UNORM_INT8X4, 4);   // 4 B a texel, not 16: 16 MiB
  array3d("snorm16x4", 512, 512, 2, CU_AD_FORMAT_SNORM_INT16X4, 4);  // 8 B: 4 MiB
  array3d("bc1", 4096, 4096, 0, CU_AD_FORMAT_BC1_UNORM, 4);          // 8 B a 4x4 block: 8 MiB
  array3d("bc7", 2048, 2048, 0, CU_AD_FORMAT_BC7_UNORM, 4);          // 16 B a block: 4 MiB
  array3d("nv12", 4096, 1024, 0, CU_AD_FORMAT_NV12, 1);              // 1.5 B a texel: 6 MiB
  array3d("sparse", 1024, 1024, 4, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_SPARSE);  // no memory of its own
  array3d("deferred", 1024, 1024, 0, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_DEFERRED_MAPPING);
  CUDA_ARRAY_DESCRIPTOR d2 = {1024, 1024, CU_AD_FORMAT_UNORM_INT16X2, 2};  // 2D: 4 B a texel, 4 MiB
  size_t before = free_now();
  CUarray a2;
  check(cuArrayCreate(&a2, &d2), "unorm16x2");
  printf("unorm16x2 %zu\n", before - free_now());
  return 0;
}
