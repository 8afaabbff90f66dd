/* The cost of a fork in a traced process (docs/security.md, "Threads, forks and a second copy"):
 * a context and 1 MiB (the trace opens), then one fork whose child prints its private dirty memory
 * (what the fork handlers copied), then 20 fork + _exit + waitpid, timed. bench/run_process_costs.sh
 * runs it untraced and traced. */
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>
typedef unsigned long long dptr;
static long priv_dirty(void) { FILE* f = fopen("/proc/self/smaps_rollup", "r"); char l[256]; long v = -1; while (fgets(l, sizeof l, f)) if (!strncmp(l, "Private_Dirty", 13)) sscanf(l + 14, "%ld", &v); fclose(f); return v; }
int main() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  int (*init)(unsigned) = dlsym(h, "cuInit"); int (*ret)(void**, int) = dlsym(h, "cuDevicePrimaryCtxRetain");
  int (*mal)(dptr*, size_t) = dlsym(h, "cuMemAlloc_v2"); int (*setc)(void*) = dlsym(h, "cuCtxSetCurrent");
  void* ctx; init(0); ret(&ctx, 0); setc(ctx); dptr p; mal(&p, 1 << 20);
  pid_t c = fork(); if (c == 0) { printf("child private dirty %ld kB\n", priv_dirty()); fflush(stdout); _exit(0); } waitpid(c, 0, 0);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 20; ++i) { pid_t c = fork(); if (c == 0) _exit(0); waitpid(c, 0, 0); }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("fork+exit+wait: %.3f ms each\n", ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6) / 20);
  return 0;
}
