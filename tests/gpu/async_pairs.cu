// What a warm stream-ordered allocation pair costs (tests/gpu/device_run.sh, section measure:
// bare, under vramtrace with CUPTI's MEMORY2 and without). Prints ns_per_pair.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
int main() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  void* p = nullptr;
  for (int i = 0; i < 1000; ++i) { cudaMallocAsync(&p, 1 << 20, s); cudaFreeAsync(p, s); }  // warm the pool
  cudaStreamSynchronize(s);
  const int n = 200000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) { cudaMallocAsync(&p, 1 << 20, s); cudaFreeAsync(p, s); }
  cudaStreamSynchronize(s);
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  printf("ns_per_pair %.1f\n", ns);
  return 0;
}
