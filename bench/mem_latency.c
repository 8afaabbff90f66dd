// The machine's memory latency, for reading the figures bound by cache misses (the replay with a
// million live allocations): a chase of dependent loads around one random cycle through 64 MiB,
// with 4 KiB pages, then with huge pages where the kernel gives them (MADV_HUGEPAGE).
// Usage: mem_latency   Prints two lines: ns per dependent load, each way.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double chase(int huge) {
  const size_t n = (64u << 20) / sizeof(uint64_t);
  uint64_t* a = mmap(NULL, n * sizeof *a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) return -1;
  if (huge) madvise(a, n * sizeof *a, MADV_HUGEPAGE);
  // One cycle through every word (Sattolo's shuffle): no load's address is known before the last.
  for (size_t i = 0; i < n; ++i) a[i] = i;
  uint64_t x = 88172645463325252ull;
  for (size_t i = n - 1; i > 0; --i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = x % i;
    uint64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  struct timespec s, e;
  const int loads = 10000000;
  uint64_t p = 0;
  clock_gettime(CLOCK_MONOTONIC, &s);
  for (int k = 0; k < loads; ++k) p = a[p];
  clock_gettime(CLOCK_MONOTONIC, &e);
  munmap(a, n * sizeof *a);
  if (p == ~0ull) puts("");  // (keeps the chase)
  return ((e.tv_sec - s.tv_sec) * 1e9 + (e.tv_nsec - s.tv_nsec)) / loads;
}

int main(void) {
  double small = chase(0), huge = chase(1);
  if (small <= 0 || huge <= 0) {
    fprintf(stderr, "mem_latency: no memory for the 64 MiB table\n");
    return 1;
  }
  printf("%.1f ns per dependent load (64 MiB, 4 KiB pages)\n%.1f ns per dependent load (64 MiB, MADV_HUGEPAGE)\n", small, huge);
  return 0;
}
