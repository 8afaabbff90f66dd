// selftest_pools.cpp — CUDA 13's per-location pools (cuMem{GetDefault,Get,Set}MemPool with
// device, host, host-NUMA and managed locations: host and managed pools are not device memory),
// pool pages, the release threshold applied at stream/event synchronize, how a pool splits its
// chunks between allocations (USED is the live bytes, RESERVED the chunks), and events.
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

// A pool reserves chunks of whole 2 MiB pages and splits them (api_pool.cpp). Every check
// marked "split" fails with a pool that hands out free blocks whole.
void test_pool_splitting() {
  const size_t base_free = free_mem();
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = loc(CU_MEM_LOCATION_TYPE_DEVICE, 0);
  CUmemoryPool pool = nullptr;
  OK(cuMemPoolCreate(&pool, &props));
  auto used = [&pool] { return pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT); };
  auto reserved = [&pool] { return pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); };

  // A 16 MiB chunk, freed: a 4 MiB request takes its start, the rest stays free.
  CUdeviceptr a16 = 0, a = 0, b = 0, c = 0, d = 0;
  OK(cuMemAllocFromPoolAsync(&a16, 16 * MiB, pool, nullptr));
  OK(cuMemFreeAsync(a16, nullptr));
  OK(cuMemAllocFromPoolAsync(&a, 4 * MiB, pool, nullptr));
  CHECK(a == a16);
  CHECK(used() == 4 * MiB);  // split
  CHECK(reserved() == 16 * MiB);
  CHECK(free_mem() == base_free - 16 * MiB);
  OK(cuMemAllocFromPoolAsync(&b, 4 * MiB, pool, nullptr));
  CHECK(b == a + 4 * MiB);        // split: the same chunk, right after
  CHECK(reserved() == 16 * MiB);  // split: no growth
  OK(cuMemAllocFromPoolAsync(&c, 4 * MiB, pool, nullptr));
  CHECK(c == a + 8 * MiB);
  CHECK(used() == 12 * MiB);
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 16 * MiB);  // the first 16 MiB
  // Free ranges kept apart by a live allocation: 4 MiB and 8 MiB free, but no 12 MiB range,
  // so a 12 MiB request grows the pool by a chunk of its own.
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemFreeAsync(c, nullptr));
  CHECK(used() == 4 * MiB);
  CUdeviceptr twelve = 0;
  OK(cuMemAllocFromPoolAsync(&twelve, 12 * MiB, pool, nullptr));
  CHECK(twelve < a || twelve >= a + 16 * MiB);
  CHECK(reserved() == 28 * MiB);
  CHECK(free_mem() == base_free - 28 * MiB);
  OK(cuMemFreeAsync(twelve, nullptr));
  // The free of b coalesces it with both neighbours: 16 MiB fit again, at the chunk's start, and
  // the best fit is that chunk, not the free 12 MiB one (too small) nor a new one.
  OK(cuMemFreeAsync(b, nullptr));
  CHECK(used() == 0);
  OK(cuMemAllocFromPoolAsync(&a16, 16 * MiB, pool, nullptr));
  CHECK(a16 == a);
  CHECK(reserved() == 28 * MiB);
  // Best fit: a 2 MiB request takes the smallest range that holds it (a new 2 MiB chunk is not
  // needed while the 12 MiB chunk is free; it takes that chunk's start).
  OK(cuMemAllocFromPoolAsync(&d, 2 * MiB, pool, nullptr));
  CHECK(d == twelve);
  CHECK(reserved() == 28 * MiB);
  OK(cuMemFreeAsync(d, nullptr));

  // 512-byte rounding: USED counts each allocation rounded to 512 B, and the next one starts
  // right after it.
  OK(cuMemFreeAsync(a16, nullptr));
  CUdeviceptr s1 = 0, s2 = 0, s3 = 0;
  OK(cuMemAllocFromPoolAsync(&s1, 1000, pool, nullptr));
  OK(cuMemAllocFromPoolAsync(&s2, 1, pool, nullptr));
  OK(cuMemAllocFromPoolAsync(&s3, 1536, pool, nullptr));
  CHECK(used() == 1024 + 512 + 1536);  // split
  CHECK(s2 == s1 + 1024 && s3 == s2 + 512);
  CHECK(s1 == twelve);  // the smallest free range is the free 12 MiB chunk
  CHECK(reserved() == 28 * MiB);

  // Trimming releases only chunks that are entirely free, largest first: the 16 MiB chunk is
  // free, the 12 MiB one holds s1..s3, and a new 20 MiB one is freed.
  CUdeviceptr big = 0, e = 0;
  OK(cuMemAllocFromPoolAsync(&big, 20 * MiB, pool, nullptr));
  OK(cuMemFreeAsync(big, nullptr));
  CHECK(reserved() == 48 * MiB);
  OK(cuMemPoolTrimTo(pool, 20 * MiB));  // 20 MiB goes (28 stay); 16 more would leave 12 < 20
  CHECK(reserved() == 28 * MiB);
  CHECK(free_mem() == base_free - 28 * MiB);
  OK(cuMemPoolTrimTo(pool, 0));  // the 16 MiB chunk goes; the 12 MiB one, nearly all free, stays
  CHECK(reserved() == 12 * MiB);
  CHECK(used() == 3 * 1024);
  // The rest of that chunk is one range: a request of exactly its size fits, one byte more
  // would not (a new 2 MiB chunk for the next byte).
  OK(cuMemAllocFromPoolAsync(&d, 12 * MiB - 3 * 1024, pool, nullptr));
  CHECK(d == s3 + 1536);
  CHECK(used() == 12 * MiB);
  CHECK(reserved() == 12 * MiB);
  OK(cuMemAllocFromPoolAsync(&e, 1, pool, nullptr));
  CHECK(reserved() == 14 * MiB);
  OK(cuMemFreeAsync(e, nullptr));
  OK(cuMemFreeAsync(d, nullptr));
  OK(cuMemFreeAsync(s2, nullptr));
  cuuint64_t threshold = 0;
  OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  OK(cuStreamSynchronize(nullptr));  // the 2 MiB chunk goes; the 12 MiB one holds s1 and s3
  CHECK(reserved() == 12 * MiB);
  OK(cuMemFreeAsync(s1, nullptr));
  OK(cuMemFreeAsync(s3, nullptr));
  OK(cuStreamSynchronize(nullptr));
  CHECK(reserved() == 0);
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 48 * MiB);
  CHECK(free_mem() == base_free);

  // A pool destroyed with allocations in use: free chunks go at once, a chunk in use when its
  // last allocation is freed.
  OK(cuMemAllocFromPoolAsync(&a, 4 * MiB, pool, nullptr));
  OK(cuMemAllocFromPoolAsync(&b, 4 * MiB, pool, nullptr));  // a chunk each: a's is full
  OK(cuMemAllocFromPoolAsync(&c, 6 * MiB, pool, nullptr));
  OK(cuMemFreeAsync(c, nullptr));
  CHECK(reserved() == 14 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemAllocFromPoolAsync(&a, 1 * MiB, pool, nullptr));  // best fit: the free 4 MiB chunk
  CHECK(reserved() == 14 * MiB);
  OK(cuMemPoolDestroy(pool));
  CHECK(free_mem() == base_free - 8 * MiB);  // the free 6 MiB chunk went
  OK(cuMemFreeAsync(a, nullptr));
  CHECK(free_mem() == base_free - 4 * MiB);
  OK(cuMemFreeAsync(b, nullptr));
  CHECK(free_mem() == base_free);

  // maxSize caps the chunks' bytes; splitting lets requests share what is reserved.
  props.maxSize = 16 * MiB;
  OK(cuMemPoolCreate(&pool, &props));
  OK(cuMemAllocFromPoolAsync(&a, 10 * MiB, pool, nullptr));
  OK(cuMemAllocFromPoolAsync(&b, 6 * MiB, pool, nullptr));
  CHECK(reserved() == 16 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemAllocFromPoolAsync(&a, 4 * MiB, pool, nullptr));
  OK(cuMemAllocFromPoolAsync(&c, 6 * MiB, pool, nullptr));  // split: the rest of the 10 MiB chunk
  CHECK(c == a + 4 * MiB);
  OK(cuMemFreeAsync(b, nullptr));
  CHECK_RC(cuMemAllocFromPoolAsync(&d, 8 * MiB, pool, nullptr), CUDA_ERROR_OUT_OF_MEMORY);  // 6 MiB free at most
  CHECK(reserved() == 16 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemFreeAsync(c, nullptr));
  OK(cuMemAllocFromPoolAsync(&d, 8 * MiB, pool, nullptr));  // the 10 MiB chunk is whole again
  OK(cuMemFreeAsync(d, nullptr));
  OK(cuMemPoolDestroy(pool));
  CHECK(free_mem() == base_free);

  // Context teardown frees the context's allocations: a chunk it alone used goes back to the
  // device; a chunk shared with another context's allocation stays, the range free.
  props.maxSize = 0;
  OK(cuMemPoolCreate(&pool, &props));
  OK(cuMemAllocFromPoolAsync(&a16, 16 * MiB, pool, nullptr));
  OK(cuMemFreeAsync(a16, nullptr));
  OK(cuMemAllocFromPoolAsync(&a, 4 * MiB, pool, nullptr));
  CUcontext primary = nullptr, other = nullptr;
  OK(cuCtxGetCurrent(&primary));
  OK(cuCtxCreate_v4(&other, nullptr, 0, 0));
  OK(cuMemAllocFromPoolAsync(&b, 4 * MiB, pool, nullptr));  // in a's chunk
  OK(cuMemAllocFromPoolAsync(&c, 10 * MiB, pool, nullptr));  // a chunk of its own
  CHECK(b == a + 4 * MiB);
  CHECK(reserved() == 26 * MiB);
  CHECK(used() == 18 * MiB);
  OK(cuCtxDestroy_v2(other));
  CUcontext cur = nullptr;
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == primary);
  CHECK(reserved() == 16 * MiB);
  CHECK(used() == 4 * MiB);
  CHECK(free_mem() == base_free - 16 * MiB);
  OK(cuMemAllocFromPoolAsync(&b, 12 * MiB, pool, nullptr));  // b's range coalesced with the rest
  CHECK(b == a + 4 * MiB);
  OK(cuMemFreeAsync(b, nullptr));
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemPoolDestroy(pool));
  CHECK(free_mem() == base_free);

  // Host pools split their chunks the same way (real memory: both halves writable).
  CUmemLocation h = loc(CU_MEM_LOCATION_TYPE_HOST, 0);
  CUmemoryPool host = nullptr;
  OK(cuMemGetDefaultMemPool(&host, &h, CU_MEM_ALLOCATION_TYPE_PINNED));
  OK(cuMemAllocFromPoolAsync(&a, 10 * MiB, host, nullptr));
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemAllocFromPoolAsync(&b, 3 * MiB, host, nullptr));
  OK(cuMemAllocFromPoolAsync(&c, 7 * MiB, host, nullptr));
  CHECK(b == a && c == a + 3 * MiB);
  CHECK(pool_attr(host, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);
  CHECK(pool_attr(host, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 10 * MiB);
  memset(reinterpret_cast<void *>(b), 1, 3 * MiB);
  memset(reinterpret_cast<void *>(c), 2, 7 * MiB);
  CHECK(reinterpret_cast<const char *>(b)[3 * MiB - 1] == 1);
  OK(cuMemFreeAsync(b, nullptr));
  OK(cuMemFreeAsync(c, nullptr));
  OK(cuStreamSynchronize(nullptr));
  CHECK(pool_attr(host, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
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
