// Workloads recorded into the golden traces (tests/golden/record.sh) that no other test program
// makes: each is a pattern the analyzer has a rule for. Runs against the simulated driver (-lcuda).
//   vmm           PyTorch expandable_segments / XLA style: one VA reservation, 2 MiB physical
//                 chunks created and mapped until cuMemCreate runs out of memory; half the handles
//                 released right after mapping (their memory goes at unmap), a host-located
//                 handle, a handle created and released unmapped; then everything unmapped
//                 (FAKECUDA_TOTAL_BYTES=32MiB)
//   cache-flush   a caching allocator: blocks kept after use, a request that fails, the cache
//                 emptied (cuMemFree of every cached block) and the same request retried
//                 successfully (FAKECUDA_TOTAL_BYTES=96MiB)
//   multi-device  two devices (FAKECUDA_DEVICES=2): memory on each, a pool located on device 1
//                 used from device 0's context, device 1's default pool, pinned host memory,
//                 then device 1's context destroyed with memory still live
// Exit 0 when the workload ran as planned.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                         \
  do {                                                                      \
    CUresult r_ = (call);                                                   \
    if (r_ != CUDA_SUCCESS) {                                               \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, int(r_)); \
      return 10;                                                            \
    }                                                                       \
  } while (0)

namespace {

const size_t MiB = 1 << 20;

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

__attribute__((noinline)) CUresult grow_segment(CUdeviceptr at, CUmemGenericAllocationHandle* h, bool release_now) {
  CUmemAllocationProp prop = device_prop(0);
  CUresult r = cuMemCreate(h, 2 * MiB, &prop, 0);
  if (r != CUDA_SUCCESS) return r;
  if ((r = cuMemMap(at, 2 * MiB, 0, *h, 0)) != CUDA_SUCCESS) return r;
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if ((r = cuMemSetAccess(at, 2 * MiB, &access, 1)) != CUDA_SUCCESS) return r;
  if (release_now) r = cuMemRelease(*h);  // the mapping keeps the memory alive
  return r;
}

int vmm() {
  CUdeviceptr base = 0;
  CHECK(cuMemAddressReserve(&base, 64 * MiB, 0, 0, 0));
  std::vector<CUmemGenericAllocationHandle> handles;
  CUresult r = CUDA_SUCCESS;
  while (handles.size() < 32) {
    CUmemGenericAllocationHandle h = 0;
    r = grow_segment(base + handles.size() * 2 * MiB, &h, handles.size() % 2 == 1);
    if (r != CUDA_SUCCESS) break;
    handles.push_back(h);
  }
  if (r != CUDA_ERROR_OUT_OF_MEMORY) return 11;
  // Host-located physical memory, and a device handle that is never mapped.
  CUmemAllocationProp host;
  memset(&host, 0, sizeof host);
  host.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemGenericAllocationHandle hh = 0, spare = 0;
  CHECK(cuMemCreate(&hh, 2 * MiB, &host, 0));
  // Unmap the last two chunks: one released already (freed now), one still held (not freed).
  size_t n = handles.size();
  CHECK(cuMemUnmap(base + (n - 1) * 2 * MiB, 2 * MiB));
  CHECK(cuMemUnmap(base + (n - 2) * 2 * MiB, 2 * MiB));
  CUmemAllocationProp prop = device_prop(0);
  CHECK(cuMemCreate(&spare, 2 * MiB, &prop, 0));
  CHECK(cuMemRelease(spare));
  // Then the rest: unmap in one call, release the handles still held.
  CHECK(cuMemUnmap(base, (n - 2) * 2 * MiB));
  for (size_t i = 0; i < n; i += 2) CHECK(cuMemRelease(handles[i]));
  CHECK(cuMemRelease(hh));
  CHECK(cuMemAddressFree(base, 64 * MiB));
  return 0;
}

__attribute__((noinline)) CUresult cache_block(std::vector<CUdeviceptr>& cache, size_t bytes) {
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, bytes);
  if (r == CUDA_SUCCESS) cache.push_back(p);
  return r;
}
__attribute__((noinline)) CUresult big_activation(CUdeviceptr* p, size_t bytes) { return cuMemAlloc(p, bytes); }

int cache_flush() {
  std::vector<CUdeviceptr> cache, weights;
  CHECK(cache_block(weights, 16 * MiB));
  for (int i = 0; i < 4; ++i) CHECK(cache_block(cache, 16 * MiB));  // used, then kept cached
  CUdeviceptr big = 0;
  if (big_activation(&big, 48 * MiB) != CUDA_ERROR_OUT_OF_MEMORY) return 11;
  for (CUdeviceptr p : cache) CHECK(cuMemFree(p));  // empty_cache()
  CHECK(big_activation(&big, 48 * MiB));            // the retry
  CHECK(cuMemFree(big));
  return 0;
}

__attribute__((noinline)) CUresult from_pool(CUdeviceptr* p, size_t bytes, CUmemoryPool pool, CUstream s) {
  return cuMemAllocFromPoolAsync(p, bytes, pool, s);
}

int multi_device() {
  CUdevice d0, d1;
  CUcontext c0, c1;
  CHECK(cuDeviceGet(&d0, 0));
  CHECK(cuDeviceGet(&d1, 1));
  CUctxCreateParams params;
  memset(&params, 0, sizeof params);
  CHECK(cuCtxCreate(&c1, &params, 0, d1));
  CHECK(cuDevicePrimaryCtxRetain(&c0, d0));
  CHECK(cuCtxSetCurrent(c0));
  CUdeviceptr a0 = 0, a1 = 0, b1 = 0, p1 = 0;
  CHECK(cuMemAlloc(&a0, 8 * MiB));
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CUmemoryPool pool1;
  CUstream s0, s1;
  CHECK(cuMemPoolCreate(&pool1, &props));
  CHECK(cuStreamCreate(&s0, 0));
  CHECK(from_pool(&p1, 6 * MiB, pool1, s0));  // device 0's stream, device 1's memory
  void* pinned = nullptr;
  CHECK(cuMemHostAlloc(&pinned, 1 * MiB, 0));
  CHECK(cuCtxSetCurrent(c1));
  CHECK(cuStreamCreate(&s1, 0));
  CHECK(cuMemAlloc(&a1, 4 * MiB));
  CHECK(cuMemAllocAsync(&b1, 2 * MiB, s1));
  CHECK(cuMemFreeAsync(b1, s1));
  CHECK(cuStreamSynchronize(s1));
  CHECK(cuCtxSetCurrent(c0));
  CHECK(cuMemFreeAsync(p1, s0));
  CHECK(cuStreamSynchronize(s0));
  CHECK(cuMemPoolDestroy(pool1));
  CHECK(cuCtxDestroy(c1));  // a1 goes with it
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFree(a0));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0)) return 2;
  if (mode == "multi-device") return multi_device();
  if (cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
  if (mode == "vmm") return vmm();
  if (mode == "cache-flush") return cache_flush();
  fprintf(stderr, "usage: golden_workloads vmm|cache-flush|multi-device\n");
  return 2;
}
