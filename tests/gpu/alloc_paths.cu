// Every runtime allocation path once, through cudart (built static and shared by run.sh), plus a
// request the device cannot satisfy. run.sh checks each lands as exactly one driver event.
#include <cuda_runtime.h>

#include <cstdio>

#define OK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
  void *d, *m, *h, *a;
  size_t pitch;
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  OK(cudaMalloc(&d, 1 << 20));                    // cuMemAlloc_v2
  OK(cudaMallocPitch(&m, &pitch, 1000, 100));     // cuMemAllocPitch_v2
  OK(cudaFree(m));
  OK(cudaMallocManaged(&m, 4 << 20));             // cuMemAllocManaged
  OK(cudaMallocHost(&h, 64 << 10));               // cuMemHostAlloc
  OK(cudaMallocAsync(&a, 2 << 20, s));            // cuMemAllocAsync
  OK(cudaFreeAsync(a, s));
  OK(cudaStreamSynchronize(s));
  void* huge = nullptr;
  cudaError_t e = cudaMalloc(&huge, size_t(1) << 40);  // 1 TiB: must fail, one failed event
  printf("1TiB -> %d\n", int(e));
  cudaGetLastError();
  OK(cudaFreeHost(h));
  OK(cudaFree(m));
  OK(cudaFree(d));
  return e == cudaErrorMemoryAllocation ? 0 : 2;
}
