// N threads allocate and free at once (cuMemAlloc and cuMemAllocAsync alternating); each keeps
// (t+1) MiB live at the end. Prints nothing; the test checks exact per-thread counts and totals.
// A third argument D runs each thread's loop D calls deeper (bench/run_hook_instructions.sh
// --frames: the hook's cost with a stack of realistic depth).
//   threads [threads=8] [iterations=1000] [extra frames=0]
#include <pthread.h>

#include <cstdlib>
#include <vector>

#include "workload.h"

static CUcontext g_ctx;
static int g_iterations;

static int g_extra_frames;

static void* loop(long t) {
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

// One frame per level (the empty asm after the call keeps it from becoming a jump).
__attribute__((noinline)) static void* deeper(long t, int levels) {
  void* r = levels > 0 ? deeper(t, levels - 1) : loop(t);
  asm volatile("" ::: "memory");
  return r;
}

static void* worker(void* arg) { return g_extra_frames > 0 ? deeper(long(arg), g_extra_frames - 1) : loop(long(arg)); }

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 8;
  g_iterations = argc > 2 ? atoi(argv[2]) : 1000;
  g_extra_frames = argc > 3 ? atoi(argv[3]) : 0;
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  std::vector<pthread_t> ids(threads);
  for (long t = 0; t < threads; ++t) pthread_create(&ids[t], nullptr, worker, reinterpret_cast<void*>(t));
  for (pthread_t id : ids) pthread_join(id, nullptr);
  return 0;
}
