// selftest_pools.cpp — CUDA 13's per-location pools (cuMem{GetDefault,Get,Set}MemPool with
// device, host, host-NUMA and managed locations: host and managed pools are not device memory),
// pool pages, the release threshold applied at stream/event synchronize, and events.
#include "selftest.h"

#include <cstring>

namespace selftest {
namespace {

cuuint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t v = ~0ull;
  OK(cuMemPoolGetAttribute(pool, attr, &v));
  return v;
}

CUmemLocation loc(CUmemLocationType type, int id) {
  CUmemLocation l;
  l.type = type;
  l.id = id;
  return l;
}

}  // namespace

void test_cuda13_pools() {
  const size_t base_free = free_mem();
  CUmemoryPool dev_default = nullptr, p = nullptr, host = nullptr, numa = nullptr, managed = nullptr;
  OK(cuDeviceGetDefaultMemPool(&dev_default, 0));
  CUmemLocation d0 = loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
  OK(cuMemGetDefaultMemPool(&p, &d0, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(p == dev_default);
  OK(cuMemGetMemPool(&p, &d0, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(p == dev_default);

  // Host pools: real host memory, not the device's.
  CUmemLocation h = loc(CU_MEM_LOCATION_TYPE_HOST, 0);
  OK(cuMemGetDefaultMemPool(&host, &h, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(host != nullptr && host != dev_default);
  CUmemLocation h99 = loc(CU_MEM_LOCATION_TYPE_HOST, 99);  // the id of a HOST location is ignored
  OK(cuMemGetDefaultMemPool(&p, &h99, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(p == host);
  CUdeviceptr a = 0;
  OK(cuMemAllocFromPoolAsync(&a, 10 * MiB, host, nullptr));
  memset(reinterpret_cast<void *>(a), 0x5a, 10 * MiB);  // the CPU can write it
  CHECK(free_mem() == base_free);
  CHECK(pool_attr(host, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuStreamSynchronize(nullptr));  // threshold 0: released
  CHECK(pool_attr(host, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CUmemLocation n0 = loc(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
  OK(cuMemGetDefaultMemPool(&numa, &n0, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(numa != host && numa != nullptr);
  CUmemLocation none = loc(CU_MEM_LOCATION_TYPE_NONE, 0);
  OK(cuMemGetDefaultMemPool(&managed, &none, CU_MEM_ALLOCATION_TYPE_MANAGED));
  OK(cuMemAllocFromPoolAsync(&a, 32 * MiB, managed, nullptr));
  reinterpret_cast<volatile char *>(a)[32 * MiB - 1] = 1;
  CHECK(free_mem() == base_free);  // managed memory counts nowhere until resident
  OK(cuMemFreeAsync(a, nullptr));
  CUmemoryPool managed_dev = nullptr;
  OK(cuMemGetDefaultMemPool(&managed_dev, &d0, CU_MEM_ALLOCATION_TYPE_MANAGED));
  CHECK(managed_dev != managed && managed_dev != dev_default);
  CHECK_RC(cuMemGetDefaultMemPool(&p, &none, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  CUmemLocation bad = loc(CU_MEM_LOCATION_TYPE_DEVICE, 9);
  CHECK_RC(cuMemGetDefaultMemPool(&p, &bad, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_DEVICE);

  // Setting the current pool: the location and type must match the pool's.
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = d0;
  CUmemoryPool mine = nullptr;
  OK(cuMemPoolCreate(&mine, &props));
  CHECK_RC(cuMemSetMemPool(&h, CU_MEM_ALLOCATION_TYPE_PINNED, mine), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuMemSetMemPool(&d0, CU_MEM_ALLOCATION_TYPE_MANAGED, mine), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemSetMemPool(&d0, CU_MEM_ALLOCATION_TYPE_PINNED, mine));
  OK(cuDeviceGetMemPool(&p, 0));
  CHECK(p == mine);  // the same slot as cuDeviceSetMemPool's
  OK(cuMemAllocAsync(&a, 3 * MiB, nullptr));
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 3 * MiB);
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 4 * MiB);  // whole pages
  CHECK(free_mem() == base_free - 4 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemSetMemPool(&h, CU_MEM_ALLOCATION_TYPE_PINNED, host));
  OK(cuMemGetMemPool(&p, &h, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(p == host);
  OK(cuMemPoolDestroy(mine));
  OK(cuMemGetMemPool(&p, &d0, CU_MEM_ALLOCATION_TYPE_PINNED));
  CHECK(p == dev_default);  // back to the default
  CHECK(free_mem() == base_free);

  // Pool creation rules of CUDA 13.
  props.location = loc(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
  CHECK_RC(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = h;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // "not IPC capable"
  CHECK_RC(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = d0;
  props.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CHECK_RC(cuMemPoolCreate(&mine, &props), CUDA_ERROR_NOT_SUPPORTED);

  // Small blocks share a pool's pages; the threshold keeps memory across a synchronize.
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  OK(cuMemPoolCreate(&mine, &props));
  CUdeviceptr s1 = 0, s2 = 0;
  OK(cuMemAllocFromPoolAsync(&s1, 1000, mine, nullptr));
  OK(cuMemAllocFromPoolAsync(&s2, 1000, mine, nullptr));
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 2 * MiB);
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 2048);
  OK(cuMemFreeAsync(s1, nullptr));
  OK(cuMemFreeAsync(s2, nullptr));
  CUdeviceptr b[3];
  for (CUdeviceptr &x : b) OK(cuMemAllocFromPoolAsync(&x, 30 * MiB, mine, nullptr));
  for (CUdeviceptr x : b) OK(cuMemFreeAsync(x, nullptr));
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 92 * MiB);
  cuuint64_t threshold = 50 * MiB;
  OK(cuMemPoolSetAttribute(mine, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  // An event synchronize applies it too: free blocks go while at least 50 MiB stay.
  CUevent ev = nullptr;
  OK(cuEventCreate(&ev, 0));
  OK(cuEventRecord(ev, nullptr));
  OK(cuEventSynchronize(ev));
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 60 * MiB);
  CHECK(free_mem() == base_free - 60 * MiB);
  threshold = 0;
  OK(cuMemPoolSetAttribute(mine, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  OK(cuEventSynchronize(ev));
  CHECK(pool_attr(mine, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  OK(cuEventDestroy(ev));
  OK(cuMemPoolDestroy(mine));
  CHECK(free_mem() == base_free);
}

void test_events() {
  CUevent a = nullptr, b = nullptr;
  CHECK_RC(cuEventCreate(&a, 0x80), CUDA_ERROR_INVALID_VALUE);
  OK(cuEventCreate(&a, CU_EVENT_DISABLE_TIMING));
  OK(cuEventCreate(&b, 0));
  float ms = -1;
  CHECK_RC(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);  // not recorded yet
  OK(cuEventRecord(a, nullptr));
  OK(cuEventRecord(b, nullptr));
  OK(cuEventElapsedTime(&ms, a, b));
  CHECK(ms == 0.0f);
  OK(cuEventQuery(a));
  OK(cuStreamWaitEvent(nullptr, a, 0));
  OK(cuEventDestroy(a));
  OK(cuEventDestroy(b));
  CHECK_RC(cuEventQuery(a), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(cuEventSynchronize(b), CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace selftest
