// The real CUDA runtime (linked statically or dynamically) initialising against the simulated
// driver: it performs its whole lookup sequence (dlsym of cuGetProcAddress_v2, the self-lookup,
// ~440 lookups with flags 0 and 2), then fails in cuGetExportTable, as expected without a GPU.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  cudaError_t e = cudaFree(nullptr);
  printf("cudaFree(0) = %d\n", int(e));
  return 0;
}
