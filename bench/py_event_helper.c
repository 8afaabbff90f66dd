/* Native half of bench/py_event_bench.py: a loop of cuMemAllocAsync/cuMemFreeAsync pairs through
 * the simulated driver, called with ctypes.CDLL (GIL released, like PyTorch's bindings) from the
 * bottom of a 32-frame Python stack. vt_py_bench_loop is the function callgrind counts
 * (--toggle-collect), so its instructions are exactly the pairs' (hooks included). */
#include <cuda.h>
#include <time.h>

static CUstream g_stream;

int vt_py_bench_setup(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&g_stream, 0))
    return -1;
  return 0;
}

__attribute__((noinline)) int vt_py_bench_loop(int pairs) {
  CUdeviceptr d;
  int bad = 0;
  for (int i = 0; i < pairs; ++i) {
    bad |= cuMemAllocAsync(&d, 1 << 20, g_stream) != CUDA_SUCCESS;
    bad |= cuMemFreeAsync(d, g_stream) != CUDA_SUCCESS;
  }
  return bad;
}

/* Nanoseconds for `pairs` pairs (-1 if a call failed). */
double vt_py_bench_time(int pairs) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int bad = vt_py_bench_loop(pairs);
  clock_gettime(CLOCK_MONOTONIC, &b);
  return bad ? -1.0 : (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}
