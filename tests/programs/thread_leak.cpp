// Concurrency and a one-thread leak, at the driver level. N threads (named worker-0...) start one
// after another and run the same loop: allocate at two lines, hold them a moment, free them.
// Thread 7 skips every other free of the first: its memory grows at a line every thread
// allocates at, while the others' temporaries there and at the second line only overlap more as
// threads join. Prints "leaker TID".
//   thread_leak [threads=32] [iterations=200]
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "workload.h"

static CUcontext g_ctx;
static int g_iterations;
// (volatile: a constant let the compiler give the leaker its own copy of the loop, another call site)
static volatile long g_leaker = 7;

static void* worker(void* arg) {
  const long n = long(arg);
  char name[16];
  snprintf(name, sizeof name, "worker-%ld", n);
  pthread_setname_np(pthread_self(), name);  // before its first CUDA call: the trace's thread record has it
  usleep(useconds_t(n) * 2000);              // the pool fills up as the run goes on
  CHECK(cuCtxSetCurrent(g_ctx));
  if (n == g_leaker) printf("leaker %ld\n", long(syscall(SYS_gettid)));
  unsigned seed = unsigned(n);
  for (int i = 0; i < g_iterations; ++i) {
    CUdeviceptr p, scratch;
    CHECK(cuMemAlloc(&p, 1 << 20));  // every thread's line
    CHECK(cuMemAlloc(&scratch, 4 << 20));  // every thread's temporary: always freed
    usleep(rand_r(&seed) % 300);
    CHECK(cuMemFree(scratch));
    if (n != g_leaker || i % 2) CHECK(cuMemFree(p));
    usleep(rand_r(&seed) % 300);
  }
  return nullptr;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 32;
  g_iterations = argc > 2 ? atoi(argv[2]) : 200;
  setvbuf(stdout, nullptr, _IONBF, 0);
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  std::vector<pthread_t> ids(static_cast<size_t>(threads));
  for (long t = 0; t < threads; ++t) pthread_create(&ids[size_t(t)], nullptr, worker, reinterpret_cast<void*>(t));
  for (pthread_t id : ids) pthread_join(id, nullptr);
  return 0;
}
