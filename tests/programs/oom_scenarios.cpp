// Programs that run out of memory on the simulated device, one per OOM verdict, from call sites
// with known names (built with -g). tests/e2e/report_test.cpp runs each and checks the verdict:
//   too-big      a request larger than the device                  -> request_exceeds_device
//   others       run with FAKECUDA_FOREIGN_BYTES: memory held elsewhere -> other_processes
//   leak         a buffer kept every step until the device is full    -> leak_growth
//   live-set     weights that leave no room for the activations      -> live_set_too_large
//   fragmentation a pool full of freed blocks, each pinned apart from the next by a small live
//                one, too small for a request                        -> fragmentation
//   steps N      no OOM: weights, then N steps that each keep 8 MiB (for diff and check)
//   two-lines A B  no OOM: A MiB and B MiB from two lines of one function, kept
//   only-oom     one request larger than any device and nothing else (a peak of 0 B)
//   pool-limit   a pool created with maxSize 256 MiB holds 256 MiB; 64 MiB more from it fails
//   retries N    N requests larger than the device, each an OOM
// Exit 0 when the expected CUDA_ERROR_OUT_OF_MEMORY came back.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static CUresult g_last = CUDA_SUCCESS;

__attribute__((noinline)) CUdeviceptr load_weights(size_t bytes) {
  CUdeviceptr p = 0;
  g_last = cuMemAlloc(&p, bytes);
  return p;
}
// Two allocations of one function on two lines (diff and check tell them apart by line order).
__attribute__((noinline)) void two_lines(size_t first, size_t second) {
  CUdeviceptr a, b;
  g_last = cuMemAlloc(&a, first);
  if (g_last == CUDA_SUCCESS) g_last = cuMemAlloc(&b, second);
}
__attribute__((noinline)) CUresult big_request(size_t bytes) {
  CUdeviceptr p;
  return cuMemAlloc(&p, bytes);
}
__attribute__((noinline)) CUresult step_temp(size_t bytes) {
  CUdeviceptr p;
  CUresult r = cuMemAlloc(&p, bytes);
  if (r == CUDA_SUCCESS) cuMemFree(p);
  return r;
}
__attribute__((noinline)) CUresult keep_history(std::vector<CUdeviceptr>& kept, size_t bytes) {
  CUdeviceptr p;
  CUresult r = cuMemAlloc(&p, bytes);
  if (r == CUDA_SUCCESS) kept.push_back(p);
  return r;
}
__attribute__((noinline)) CUresult big_from_pool(CUmemoryPool pool, CUstream s, size_t bytes) {
  CUdeviceptr p;
  return cuMemAllocFromPoolAsync(&p, bytes, pool, s);
}

__attribute__((noinline)) CUresult pin_in_pool(CUmemoryPool pool, CUstream s, CUdeviceptr& p) {
  return cuMemAllocFromPoolAsync(&p, size_t(1) << 20, pool, s);
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
  const size_t MiB = 1 << 20, GiB = size_t(1) << 30;
  CUresult r = CUDA_SUCCESS;
  if (mode == "too-big") {
    load_weights(100 * MiB);
    r = big_request(size_t(1) << 40);
  } else if (mode == "others") {  // FAKECUDA_TOTAL_BYTES=8GiB FAKECUDA_FOREIGN_BYTES=6GiB
    load_weights(512 * MiB);
    r = big_request(2 * GiB);
  } else if (mode == "leak") {  // FAKECUDA_TOTAL_BYTES=4GiB
    load_weights(256 * MiB);
    std::vector<CUdeviceptr> kept;
    for (int step = 0; step < 100000 && r == CUDA_SUCCESS; ++step) {
      r = step_temp(64 * MiB);
      if (r == CUDA_SUCCESS) r = keep_history(kept, 32 * MiB);
    }
  } else if (mode == "live-set") {  // FAKECUDA_TOTAL_BYTES=4GiB
    for (int i = 0; i < 7; ++i) load_weights(512 * MiB);
    for (int step = 0; step < 50; ++step) step_temp(64 * MiB);
    r = big_request(1 * GiB);
  } else if (mode == "fragmentation") {  // FAKECUDA_TOTAL_BYTES=4GiB
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CUstream s;
    if (cuMemPoolCreate(&pool, &props) || cuStreamCreate(&s, 0)) return 2;
    cuuint64_t keep_all = ~cuuint64_t(0);
    cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
    // 48 chunks of 64 MiB, each a 63 MiB block and a 1 MiB pin at its end (the rest of the
    // chunk, which the pool splits off); the blocks freed, the pins kept: 3 GiB reserved, 48 MiB
    // live, and no free range longer than 63 MiB (each pinned apart from the next, in chunks
    // of their own). No chunk is entirely free, so trimming the pool would not help either.
    std::vector<CUdeviceptr> blocks(48), pins(48);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (cuMemAllocFromPoolAsync(&blocks[i], 63 * MiB, pool, s) || pin_in_pool(pool, s, pins[i])) return 2;
      if (pins[i] != blocks[i] + 63 * MiB) return 2;  // not the layout this scenario is about
    }
    for (CUdeviceptr b : blocks) cuMemFreeAsync(b, s);  // the pool keeps them
    r = big_from_pool(pool, s, 1536 * MiB);
  } else if (mode == "pool-limit") {  // a pool capped at 256 MiB, full; the device has room
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = 256 * MiB;
    CUmemoryPool pool;
    CUstream s;
    if (cuMemPoolCreate(&pool, &props) || cuStreamCreate(&s, 0)) return 2;
    CUdeviceptr a, b;
    if (cuMemAllocFromPoolAsync(&a, 128 * MiB, pool, s) || cuMemAllocFromPoolAsync(&b, 128 * MiB, pool, s)) return 2;
    r = big_from_pool(pool, s, 64 * MiB);
  } else if (mode == "retries") {  // N requests larger than the device, each failing
    load_weights(100 * MiB);
    int n = argc > 2 ? atoi(argv[2]) : 10;
    for (int i = 0; i < n; ++i) r = big_request(size_t(1) << 40);
  } else if (mode == "only-oom") {
    r = big_request(size_t(1) << 50);  // nothing allocated: a peak of 0 B
  } else if (mode == "two-lines") {
    two_lines(size_t(argc > 2 ? atoi(argv[2]) : 1) * MiB, size_t(argc > 3 ? atoi(argv[3]) : 1) * MiB);
    return g_last == CUDA_SUCCESS ? 0 : 1;
  } else if (mode == "steps") {
    load_weights(256 * MiB);
    std::vector<CUdeviceptr> kept;
    int n = argc > 2 ? atoi(argv[2]) : 10;
    for (int step = 0; step < n; ++step) {
      step_temp(64 * MiB);
      keep_history(kept, 8 * MiB);
    }
    return 0;
  } else {
    fprintf(stderr, "usage: oom_scenarios too-big|others|leak|live-set|fragmentation|steps N|two-lines A B|only-oom|pool-limit|retries N\n");
    return 2;
  }
  printf("%s: CUresult %d\n", mode.c_str(), int(r));
  return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
