// Cost of the hook per alloc/free pair through the simulated driver, for each way a program
// reaches the driver. Run it three times (bench/run_hook_bench.sh does): without the preload
// library (baseline), with it writing a trace, and with VRAMTRACE_SINK=null (hook without the
// file). The differences are what vramtrace adds per event.
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#undef cuGetProcAddress

namespace {

struct Pair {
  CUresult (*alloc)(CUdeviceptr*, size_t);
  CUresult (*free)(CUdeviceptr);
  CUresult (*alloc_async)(CUdeviceptr*, size_t, CUstream);
  CUresult (*free_async)(CUdeviceptr, CUstream);
};

CUstream g_stream;

void setup_driver() {
  static bool done = false;
  if (done) return;
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&g_stream, 0)) {
    fprintf(stderr, "driver setup failed\n");
    exit(1);
  }
  done = true;
}

Pair direct() { return {cuMemAlloc_v2, cuMemFree_v2, cuMemAllocAsync, cuMemFreeAsync}; }

Pair via_dlsym() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return {reinterpret_cast<decltype(Pair::alloc)>(dlsym(lib, "cuMemAlloc_v2")),
          reinterpret_cast<decltype(Pair::free)>(dlsym(lib, "cuMemFree_v2")),
          reinterpret_cast<decltype(Pair::alloc_async)>(dlsym(lib, "cuMemAllocAsync")),
          reinterpret_cast<decltype(Pair::free_async)>(dlsym(lib, "cuMemFreeAsync"))};
}

Pair via_proc_address() {
  typedef CUresult (*GetProc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto first = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  CUdriverProcAddressQueryResult st;
  void* self = nullptr;
  first("cuGetProcAddress", &self, 12000, 0, &st);
  auto get = reinterpret_cast<GetProc>(self);
  Pair p{};
  get("cuMemAlloc", reinterpret_cast<void**>(&p.alloc), 13000, 0, &st);
  get("cuMemFree", reinterpret_cast<void**>(&p.free), 13000, 0, &st);
  get("cuMemAllocAsync", reinterpret_cast<void**>(&p.alloc_async), 13000, 0, &st);
  get("cuMemFreeAsync", reinterpret_cast<void**>(&p.free_async), 13000, 0, &st);
  return p;
}

template <Pair (*Get)()>
void BM_AllocFree(benchmark::State& state) {
  setup_driver();
  Pair p = Get();
  CUdeviceptr d;
  for (auto _ : state) {
    p.alloc(&d, 1 << 20);
    p.free(d);
  }
  state.SetItemsProcessed(state.iterations() * 2);  // events
}

template <Pair (*Get)()>
void BM_AllocFreeAsync(benchmark::State& state) {
  setup_driver();
  Pair p = Get();
  CUdeviceptr d;
  for (auto _ : state) {
    p.alloc_async(&d, 1 << 20, g_stream);
    p.free_async(d, g_stream);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

// The same pair from 32 frames down, for the cost of unwinding (VRAMTRACE_STACK_DEPTH).
__attribute__((noinline)) void deep_loop(benchmark::State& state, const Pair& p, int depth) {
  if (depth > 0) {
    deep_loop(state, p, depth - 1);
    benchmark::ClobberMemory();  // not a tail call: one real frame per level
    return;
  }
  CUdeviceptr d;
  for (auto _ : state) {
    p.alloc_async(&d, 1 << 20, g_stream);
    p.free_async(d, g_stream);
  }
}

void BM_AllocFreeAsync32Frames(benchmark::State& state) {
  setup_driver();
  Pair p = direct();
  deep_loop(state, p, 32 - 8);  // ~8 frames of benchmark runner and main below
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_AllocFreeAsync32Frames);

BENCHMARK_TEMPLATE(BM_AllocFree, direct);
BENCHMARK_TEMPLATE(BM_AllocFree, via_dlsym);
BENCHMARK_TEMPLATE(BM_AllocFree, via_proc_address);
BENCHMARK_TEMPLATE(BM_AllocFreeAsync, direct);
BENCHMARK_TEMPLATE(BM_AllocFreeAsync, via_dlsym);
BENCHMARK_TEMPLATE(BM_AllocFreeAsync, via_proc_address);
BENCHMARK_TEMPLATE(BM_AllocFreeAsync, direct)->Threads(8)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
