/* A C library the stack test dlopens after its first allocation: its addresses are unknown to the
 * module map until then. Built with -g. */
#include <cuda.h>
#include <stdio.h>

__attribute__((noinline)) int plugin_alloc(void) {
  CUdeviceptr p;
  printf("plugin_alloc %d\n", __LINE__ + 1);
  CUresult r = cuMemAlloc(&p, 3 << 20);
  return (int)r;
}
