// Rule 15 (format/accounting.h) on the real driver: the default pool gives back its free memory
// at a synchronize while its release threshold is 0, and keeps it once the threshold is at its
// maximum (as PyTorch's backend:cudaMallocAsync sets it). Prints the pool's own RESERVED_MEM_CURRENT
// after each synchronize; run.sh compares the last with the report's footprint of the pool.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#define OK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  cudaMemPool_t pool;
  OK(cudaDeviceGetDefaultMemPool(&pool, 0));
  void* a;
  uint64_t reserved = 0;
  OK(cudaMallocAsync(&a, 64 << 20, s));
  OK(cudaFreeAsync(a, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  printf("reserved_after_sync_threshold_0 %llu\n", (unsigned long long)reserved);
  uint64_t keep_all = UINT64_MAX;
  OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  OK(cudaMallocAsync(&a, 64 << 20, s));
  OK(cudaFreeAsync(a, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  printf("reserved_after_sync_threshold_max %llu\n", (unsigned long long)reserved);
  return 0;
}
