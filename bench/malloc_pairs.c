/* heaptrack's side of bench/run_vs_heaptrack.sh: the shape of tests/programs/threads (one worker
 * thread, D calls deeper, N iterations of an allocation and its free) with malloc/free instead of
 * cuMemAlloc/cuMemFree, so that heaptrack (which hooks malloc) and vramtrace (which hooks the
 * driver) are measured on the same stack depth and the same number of events.
 *   malloc_pairs [iterations=1000] [extra frames=0] */
#include <pthread.h>
#include <stdlib.h>

static int g_iterations, g_extra_frames;

static void* loop(void) {
  for (int i = 0; i < g_iterations; ++i) {
    char* p = malloc((size_t)4096 + (size_t)(i % 7) * 512);
    if (!p) abort();
    p[0] = (char)i;
    __asm__ volatile("" ::"r"(p) : "memory");
    free(p);
  }
  return NULL;
}

/* One frame per level (the empty asm after the call keeps it from becoming a jump). */
__attribute__((noinline)) static void* deeper(int levels) {
  void* r = levels > 0 ? deeper(levels - 1) : loop();
  __asm__ volatile("" ::: "memory");
  return r;
}

static void* worker(void* arg) {
  (void)arg;
  return g_extra_frames > 0 ? deeper(g_extra_frames - 1) : loop();
}

int main(int argc, char** argv) {
  g_iterations = argc > 1 ? atoi(argv[1]) : 1000;
  g_extra_frames = argc > 2 ? atoi(argv[2]) : 0;
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  pthread_join(t, NULL);
  return 0;
}
