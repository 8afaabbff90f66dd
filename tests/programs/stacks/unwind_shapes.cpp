// Stacks of every shape the hook's own unwinder (interpose/stacks/fast_unwind.h) meets or hands to
// libunwind, each allocation made from several of them in turn so that the memo of a thread's
// last walk is tried against a different stack every time: run with VRAMTRACE_UNWINDER=checked,
// every stack is walked both ways and the differences are counted (tests/e2e/stacks_test.cpp).
//   unwind_shapes [rounds=50]
// Shapes: recursion of varying depth, also deeper than the deepest walk; frames with a frame pointer, with alloca (the CFA from rbp),
// with a 64-byte-aligned local (the stack realigned: a DWARF expression, libunwind's); two callers
// of identical frames at the same depth (the memo's frame matches, the words above it do not);
// calls through libc (qsort's comparator); a signal handler (a signal frame: libunwind's); a
// thread with a 64 KiB stack; a fiber on a heap stack (makecontext: bounds not the thread's).
#include <alloca.h>
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(x)                                                 \
  do {                                                           \
    if ((x) != CUDA_SUCCESS) {                                   \
      fprintf(stderr, "unwind_shapes: %s failed\n", #x);         \
      exit(1);                                                   \
    }                                                            \
  } while (0)

namespace {

CUcontext g_ctx;
volatile int g_sink;

__attribute__((noinline)) void alloc_here(size_t size) {
  CUdeviceptr p;
  CHECK(cuMemAlloc(&p, size));
  CHECK(cuMemFree(p));
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void recurse(int levels, size_t size) {
  if (levels > 0) recurse(levels - 1, size);
  else alloc_here(size);
  asm volatile("" ::: "memory");
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) void with_frame_pointer(int levels) {
  volatile char pad[48];
  pad[0] = char(levels);
  recurse(levels, 4096 + size_t(pad[0]));
}

__attribute__((noinline)) void with_alloca(int n) {
  char* p = static_cast<char*>(alloca(size_t(n) * 16 + 16));
  memset(p, 1, size_t(n) * 16 + 16);
  g_sink = p[n];
  recurse(n % 3, 8192);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void realigned(int n) {
  alignas(64) volatile char buf[128];
  buf[0] = char(n);
  recurse(n % 2, 12288 + size_t(buf[0]));
}

// The same frame layout twice: A's frames sit at the same stack address under either.
__attribute__((noinline)) void shared_leaf(int n) { recurse(1, 16384 + size_t(n)); }
__attribute__((noinline)) void caller_b(int n) {
  shared_leaf(n);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void caller_c(int n) {
  shared_leaf(n + 1);
  asm volatile("" ::: "memory");
}

int compare(const void* a, const void* b) {
  static int calls;
  if (calls++ < 4) alloc_here(20480);
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}
__attribute__((noinline)) void through_libc() {
  int v[8] = {5, 3, 7, 1, 8, 2, 6, 4};
  qsort(v, 8, sizeof *v, compare);
  g_sink = v[0];
}

void on_signal(int) { recurse(2, 24576); }

void* small_thread(void*) {
  CHECK(cuCtxSetCurrent(g_ctx));
  for (int i = 0; i < 20; ++i) recurse(i % 4, 28672);
  return nullptr;
}

ucontext_t g_main_uc, g_fiber_uc;
void fiber_body() {
  recurse(3, 32768);
  swapcontext(&g_fiber_uc, &g_main_uc);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 50;
  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  CHECK(cuCtxSetCurrent(g_ctx));
  signal(SIGUSR1, on_signal);
  for (int r = 0; r < rounds; ++r) {
    recurse(r % 9, 1024);
    with_frame_pointer(r % 5);
    with_alloca(r);
    realigned(r);
    if (r % 2) caller_b(r);
    else caller_c(r);
    recurse(r % 9, 1024);  // (the memo is a different stack by now)
  }
  // Deeper than any walk may go (256 frames at most): walks cut at their limit, memos of
  // different depths.
  for (int i = 0; i < 20; ++i) recurse(270 + (i % 3) * 7, 36864);
  through_libc();
  raise(SIGUSR1);

  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 << 10);
  pthread_t t;
  pthread_create(&t, &a, small_thread, nullptr);
  pthread_join(t, nullptr);

  static char fiber_stack[256 << 10];
  getcontext(&g_fiber_uc);
  g_fiber_uc.uc_stack.ss_sp = fiber_stack;
  g_fiber_uc.uc_stack.ss_size = sizeof fiber_stack;
  g_fiber_uc.uc_link = &g_main_uc;
  makecontext(&g_fiber_uc, fiber_body, 0);
  swapcontext(&g_main_uc, &g_fiber_uc);
  printf("unwind_shapes: %d rounds\n", rounds);
  return 0;
}
