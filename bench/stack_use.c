/* How much of the program's stack the hook takes (docs/security.md, "Stack use"): threads with a
 * painted 256 KiB stack make no call, one call, 50 calls, or the process's first call (which opens
 * the trace: argument "first"); each prints the bytes of its stack that were touched. The driver
 * is found at run time (libcuda.so.1 on LD_LIBRARY_PATH). bench/run_process_costs.sh compares traced
 * (stacks on and off) with untraced. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
typedef unsigned long long dptr;
static int (*mal)(dptr*, size_t); static int (*fre)(dptr); static int (*setc)(void*);
static void* ctx;
static size_t SZ = 256 << 10;
static int (*init)(unsigned); static int (*ret)(void**, int);
static void* worker(void* arg) {
  int n = (int)(long)arg;
  if (n < 0) { init(0); ret(&ctx, 0); n = 1; }
  setc(ctx);
  for (int i = 0; i < n; ++i) { dptr p; mal(&p, 1 << 20); fre(p); }
  return 0;
}
static size_t used(unsigned char* base) { size_t i = 0; while (i < SZ && base[i] == 0xA5) ++i; return SZ - i; }
static size_t run(int n) {
  unsigned char* st = aligned_alloc(4096, SZ); memset(st, 0xA5, SZ);
  pthread_attr_t a; pthread_attr_init(&a); pthread_attr_setstack(&a, st, SZ);
  pthread_t t; pthread_create(&t, &a, worker, (void*)(long)n); pthread_join(t, 0);
  return used(st);
}
int main(int argc, char** argv) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  init = dlsym(h, "cuInit"); ret = dlsym(h, "cuDevicePrimaryCtxRetain");
  mal = dlsym(h, "cuMemAlloc_v2"); fre = dlsym(h, "cuMemFree_v2"); setc = dlsym(h, "cuCtxSetCurrent");
  if (argc > 1) { printf("process's first event %zu\n", run(-1)); }
  init(0); ret(&ctx, 0);
  printf("baseline (no events) %zu\n", run(0));
  printf("first alloc %zu\n", run(1));
  printf("later allocs %zu\n", run(50));
  return 0;
}
