// A raw CUDA program for the CUPTI checks (tests/gpu/device_run.sh, section cupti): kernels,
// copies, NVTX ranges and stream-ordered allocations, so that kernels land after the allocations
// they use and CUPTI's MEMORY2 records can be matched one by one.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
__global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void scale(float* a, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= s;
}
int main() {
  const int n = 1 << 24;
  const size_t bytes = n * sizeof(float);  // 64 MiB: drawn as an allocation instant
  float *a, *b, *c, *h;
  nvtxRangePushA("setup");
  cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMalloc(&c, bytes);
  cudaMallocHost(&h, bytes);
  cudaMemset(a, 0, bytes);
  cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice);
  nvtxRangePop();
  for (int step = 0; step < 20; ++step) {
    nvtxRangePushA("step");
    vec_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    scale<<<(n + 255) / 256, 256>>>(c, 2.0f, n);
    float* t;
    cudaMallocAsync(&t, bytes, 0);
    cudaMemsetAsync(t, 0, bytes, 0);
    cudaFreeAsync(t, 0);
    nvtxRangePop();
  }
  cudaDeviceSynchronize();
  cudaFree(a); cudaFree(b); cudaFree(c); cudaFreeHost(h);
  return 0;
}
