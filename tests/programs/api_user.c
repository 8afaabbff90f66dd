/* Uses the live query API through the inline run-time wrappers of include/vramtrace.h, so it runs
 * with and without vramtrace. Prints one "name value" per line for tests/e2e/api_test.cpp. */
#include <cuda.h>
#include <stdio.h>

#include "vramtrace.h"

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr a, b, c;
  printf("active %d\n", vramtrace_api_active());
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
  char path[4096];
  printf("trace_path_before %d\n", vramtrace_api_trace_path(path, sizeof path));
  vramtrace_api_region_begin("setup");
  cuMemAlloc(&a, 3 << 20);
  if (vramtrace_api_trace_path(path, sizeof path) > 0) printf("trace_path %s\n", path);
  cuMemAlloc(&b, 5 << 20);
  printf("live_after_two %lld\n", (long long)vramtrace_api_live_bytes(0));
  cuMemFree(b);
  printf("live_after_free %lld\n", (long long)vramtrace_api_live_bytes(0));
  printf("peak %lld\n", (long long)vramtrace_api_peak_bytes(0));
  vramtrace_api_region_end("setup");
  printf("reset %d\n", vramtrace_api_reset_peak(-1));
  printf("peak_after_reset %lld\n", (long long)vramtrace_api_peak_bytes(0));
  vramtrace_api_region_begin("step");
  cuMemAlloc(&c, 1 << 20);
  cuMemFree(c);
  vramtrace_api_region_end("step");
  printf("peak_after_step %lld\n", (long long)vramtrace_api_peak_bytes(-1));
  return 0;
}
