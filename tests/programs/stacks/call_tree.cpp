// A program whose every allocation comes from its own call path: a tree of DEPTH levels, each
// level calling one of four functions (branch0..branch3) chosen by one base-4 digit of the path
// number, so consecutive paths share their outer frames and differ inside, as tensor-level
// allocations from many Python lines do. Prints each path's digits, outermost first, one line
// per allocation, for the test to compare with the trace's stacks.
// Usage: call_tree PATHS [DEPTH]   (DEPTH <= 12, default 8)
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

namespace {

int g_depth = 8;
unsigned g_path = 0;
volatile int g_sink = 0;  // after each call: no tail calls, so every level keeps its frame

__attribute__((noinline)) void leaf() {
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS) cuMemFree(p);
  g_sink = g_sink + 1;
}

void level(int k);
__attribute__((noinline)) void branch0(int k) { level(k + 1); g_sink = g_sink + 1; }
__attribute__((noinline)) void branch1(int k) { level(k + 1); g_sink = g_sink + 2; }
__attribute__((noinline)) void branch2(int k) { level(k + 1); g_sink = g_sink + 3; }
__attribute__((noinline)) void branch3(int k) { level(k + 1); g_sink = g_sink + 4; }

__attribute__((noinline)) void level(int k) {
  if (k == g_depth) {
    leaf();
    return;
  }
  // Digit k counted from the innermost level: the innermost frames change with every path.
  switch ((g_path >> (2 * (g_depth - 1 - k))) & 3) {
    case 0: branch0(k); break;
    case 1: branch1(k); break;
    case 2: branch2(k); break;
    default: branch3(k); break;
  }
  g_sink = g_sink + 5;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: call_tree PATHS [DEPTH]\n");
    return 2;
  }
  unsigned paths = unsigned(strtoul(argv[1], nullptr, 10));
  if (argc > 2) g_depth = atoi(argv[2]);
  if (g_depth < 1 || g_depth > 12) return 2;
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
  for (unsigned i = 0; i < paths; ++i) {
    g_path = i;
    for (int k = 0; k < g_depth; ++k) putchar('0' + int((i >> (2 * (g_depth - 1 - k))) & 3));
    putchar('\n');
    level(0);
  }
  cuDevicePrimaryCtxRelease(dev);
  return 0;
}
