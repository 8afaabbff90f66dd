// N threads allocate and free at once (cuMemAlloc and cuMemAllocAsync alternating); each keeps
// (t+1) MiB live at the end. Prints nothing; the test checks exact per-thread counts and totals.
#include <pthread.h>

#include <cstdlib>
#include <vector>

#include "workload.h"

static CUcontext g_ctx;
static int g_iterations;

static void* worker(void* arg) {
  long t = long(arg);
  CHECK(cuCtxSetCurrent(g_ctx));
  CUstream s;
  CHECK(cuStreamCreate(&s, 0));
  for (int i = 0; i < g_iterations; ++i) {
    CUdeviceptr p;
    size_t size = size_t(t + 1) * 4096 + size_t(i % 7) * 512;
    if (i % 2 == 0) {
      CHECK(cuMemAlloc(&p, size));
      CHECK(cuMemFree(p));
    } else {
      CHECK(cuMemAllocAsync(&p, size, s));
      CHECK(cuMemFreeAsync(p, s));
    }
  }
  CUdeviceptr keep;
  CHECK(cuMemAlloc(&keep, size_t(t + 1) << 20));
  return nullptr;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 8;
  g_iterations = argc > 2 ? atoi(argv[2]) : 1000;
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  std::vector<pthread_t> ids(threads);
  for (long t = 0; t < threads; ++t) pthread_create(&ids[t], nullptr, worker, reinterpret_cast<void*>(t));
  for (pthread_t id : ids) pthread_join(id, nullptr);
  return 0;
}
