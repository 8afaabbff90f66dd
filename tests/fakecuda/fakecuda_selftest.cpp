// fakecuda_selftest.cpp — checks the simulated driver against its contract: configuration
// from the environment, capacity, 2 MiB pages and OOM, pools (reuse, no-split fragmentation,
// trim, release threshold), VMM accounting, context teardown, cuGetProcAddress version/flag
// semantics, IPC, and exact accounting under 8 concurrent threads; then the parts in
// selftest_*.cpp (every entry point, graphs and capture, sharing, CUDA 13 pools and events,
// arrays and external memory, context and module costs). Prints every failed check and exits
// 1 if any failed.
#include "selftest.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

// Exported by the driver, declared by cuda.h only under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
}

namespace {

using namespace selftest;

// ---- configuration, in child processes (the environment is read once per process) ----


int config_child() {
  int version = 0;
  cuDriverGetVersion(&version);
  CUresult init = cuInit(0);
  size_t total = 0, freeb = 0;
  CUresult retain = CUDA_ERROR_NOT_INITIALIZED;
  if (init == CUDA_SUCCESS) {
    CUcontext ctx;
    retain = cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    cuMemGetInfo_v2(&freeb, &total);
  }
  printf("init=%d version=%d retain=%d total=%zu free=%zu\n", static_cast<int>(init), version,
         static_cast<int>(retain), total, freeb);
  return 0;
}

std::string run_config_child(const std::string &env) {
  std::string cmd = env + " '" + self_path() + "' --config-child 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

void test_config_parsing() {
  struct Case {
    const char *env;
    const char *expect;
  } cases[] = {
      {"FAKECUDA_TOTAL_BYTES=2G", "total=2147483648 free=2147483648"},
      {"FAKECUDA_TOTAL_BYTES=3GiB FAKECUDA_FOREIGN_BYTES=1GiB", "total=3221225472 free=2147483648"},
      {"FAKECUDA_TOTAL_BYTES=1500MB", "total=1500000000"},
      {"FAKECUDA_TOTAL_BYTES=8KiB", "total=8192"},
      {"FAKECUDA_TOTAL_BYTES=12345", "total=12345"},
      {"FAKECUDA_TOTAL_BYTES=1t", "total=1099511627776"},
      {"FAKECUDA_TOTAL_BYTES=lots", "FAKECUDA_TOTAL_BYTES"},  // the warning names it...
      {"FAKECUDA_TOTAL_BYTES=lots", "total=17179869184"},     // ...and the default is used
      {"FAKECUDA_FOREIGN_BYTES=-1", "FAKECUDA_FOREIGN_BYTES"},
      {"FAKECUDA_FOREIGN_BYTES=20G", "total=17179869184 free=0"},
      {"FAKECUDA_DRIVER_VERSION=12040", "version=12040"},
      {"FAKECUDA_DRIVER_VERSION=x", "version=13000"},
      {"FAKECUDA_DEVICES=0", "init=100 "},  // CUDA_ERROR_NO_DEVICE
      {"FAKECUDA_DEVICES=many", "FAKECUDA_DEVICES"},
      // A context costs its device memory: 512 MiB unless configured; a device without room for
      // it cannot create it.
      {"DEFAULT_CONTEXT=1 FAKECUDA_TOTAL_BYTES=2G", "retain=0 total=2147483648 free=1610612736"},
      {"FAKECUDA_TOTAL_BYTES=2G FAKECUDA_CONTEXT_BYTES=300MiB", "retain=0 total=2147483648 free=1832910848"},
      {"DEFAULT_CONTEXT=1 FAKECUDA_TOTAL_BYTES=256MiB", "retain=2 "},  // CUDA_ERROR_OUT_OF_MEMORY
      {"FAKECUDA_CONTEXT_BYTES=lots", "FAKECUDA_CONTEXT_BYTES"},
      {"FAKECUDA_MODULE_BYTES=-3", "FAKECUDA_MODULE_BYTES"},
  };
  for (const Case &c : cases) {
    // No context cost unless the case is about it (a child that sets it last wins).
    std::string env = strstr(c.env, "CONTEXT") || strstr(c.env, "DEFAULT_CONTEXT") ? "" : "FAKECUDA_CONTEXT_BYTES=0 ";
    std::string out = run_config_child(std::string("env -u FAKECUDA_DEVICES -u FAKECUDA_TOTAL_BYTES -u FAKECUDA_FOREIGN_BYTES "
                                            "-u FAKECUDA_DRIVER_VERSION -u FAKECUDA_LOG -u FAKECUDA_CONTEXT_BYTES "
                                            "-u FAKECUDA_MODULE_BYTES ") + env + c.env);
    if (out.find(c.expect) == std::string::npos) {
      fprintf(stderr, "FAIL config: with %s expected \"%s\" in output, got: %s\n", c.env, c.expect, out.c_str());
      g_failures++;
    }
  }
}

// ---- before cuInit ----

void test_before_init() {
  CUdeviceptr p;
  CHECK_RC(cuMemAlloc_v2(&p, 1024), CUDA_ERROR_NOT_INITIALIZED);
  int n;
  CHECK_RC(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  int version = 0;
  OK(cuDriverGetVersion(&version));
  CHECK(version == 13000);
  const char *s = nullptr;
  OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
  CHECK(s && strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
  OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
  CHECK(s && strcmp(s, "out of memory") == 0);
  CHECK_RC(cuGetErrorName(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  // cudart's very first call.
  void *fn = reinterpret_cast<void *>(1);
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  CHECK_RC(cuGetProcAddress_v2("", &fn, 0, 0, &st), CUDA_ERROR_NOT_FOUND);
  CHECK(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && fn == nullptr);
  OK(cuGetProcAddress_v2("cuInit", &fn, 13000, 0, &st));
  CHECK(fn == lib_sym("cuInit"));
  const void *table = reinterpret_cast<void *>(1);
  CUuuid id{};
  CHECK_RC(cuGetExportTable(&table, &id), CUDA_ERROR_NOT_SUPPORTED);
}

// ---- devices and contexts ----

void test_devices(CUcontext *primary0) {
  int n = 0;
  OK(cuDeviceGetCount(&n));
  CHECK(n == 2);
  CUdevice d;
  OK(cuDeviceGet(&d, 1));
  CHECK(d == 1);
  CHECK_RC(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
  char name[128];
  OK(cuDeviceGetName(name, sizeof name, 0));
  CHECK(strcmp(name, "NVIDIA H200 (vramtrace simulated)") == 0);
  size_t total = 0;
  OK(cuDeviceTotalMem_v2(&total, 1));
  CHECK(total == kTotal);
  int v = -1;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  CHECK(v == 9);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  CHECK(v == 0);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
  CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  CHECK(v == 1);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 0));  // "anything else": 0
  CUuuid u0, u1;
  OK(cuDeviceGetUuid_v2(&u0, 0));
  OK(cuDeviceGetUuid_v2(&u1, 1));
  CHECK(memcmp(&u0, &u1, sizeof u0) != 0);

  // No context yet.
  CUdeviceptr p;
  CHECK_RC(cuMemAlloc_v2(&p, 1024), CUDA_ERROR_INVALID_CONTEXT);
  CHECK_RC(cuMemAlloc_v2(nullptr, 1024), CUDA_ERROR_INVALID_VALUE);
  unsigned flags = 1;
  int active = 1;
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 0);
  OK(cuDevicePrimaryCtxRetain(primary0, 0));
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);
  OK(cuCtxSetCurrent(*primary0));
  CUcontext cur = nullptr;
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == *primary0);
  OK(cuCtxGetDevice(&d));
  CHECK(d == 0);
  OK(cuCtxSynchronize());
}

// ---- plain device memory ----

void test_capacity() {
  CHECK(free_mem() == kBaseFree);  // foreign bytes are not free
  CUdeviceptr a = 0, b = 0, c = 0;
  OK(cuMemAlloc_v2(&a, 512 * MiB));
  CHECK(a != 0 && a % 512 == 0);
  CHECK(free_mem() == kBaseFree - 512 * MiB);
  CHECK_RC(cuMemAlloc_v2(&b, 512 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(free_mem() == kBaseFree - 512 * MiB);  // a failed allocation changes nothing
  OK(cuMemAlloc_v2(&b, kBaseFree - 512 * MiB));  // exactly what is left
  CHECK(free_mem() == 0);
  CHECK_RC(cuMemAlloc_v2(&c, 1), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemFree_v2(b));
  OK(cuMemFree_v2(a));
  CHECK_RC(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);  // double free
  CHECK(free_mem() == kBaseFree);

  CHECK_RC(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
  // Device memory is taken in 2 MiB pages: the first small allocation costs a page, the next
  // ones share it (512-byte aligned) until it is full; the page goes when its last block does.
  OK(cuMemAlloc_v2(&a, 1));
  CHECK(free_mem() == kBaseFree - 2 * MiB);
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, a));
  CHECK(base == a && size == 1);
  OK(cuMemAlloc_v2(&b, 1000));
  CHECK(b == a + 512);  // the same page, right after
  CHECK(free_mem() == kBaseFree - 2 * MiB);
  {
    std::vector<CUdeviceptr> fill;  // 1 MiB + 512 + 1024 do not fit in one page: a second one
    for (int i = 0; i < 2; ++i) {
      CUdeviceptr p = 0;
      OK(cuMemAlloc_v2(&p, MiB));
      fill.push_back(p);
    }
    CHECK(free_mem() == kBaseFree - 4 * MiB);
    for (CUdeviceptr p : fill) OK(cuMemFree_v2(p));
  }
  CHECK(free_mem() == kBaseFree - 2 * MiB);
  OK(cuMemFree_v2(a));
  CHECK(free_mem() == kBaseFree - 2 * MiB);  // b still holds the page
  CHECK_RC(cuMemGetAddressRange_v2(&base, &size, a), CUDA_ERROR_NOT_FOUND);
  OK(cuMemAlloc_v2(&c, 100));
  CHECK(c == a);  // the freed slot is handed out again
  OK(cuMemFree_v2(c));
  OK(cuMemFree_v2(b));
  CHECK(free_mem() == kBaseFree);
  // A larger allocation takes whole pages of its own.
  OK(cuMemAlloc_v2(&a, 3 * MiB + 1));
  CHECK(a % (2 * MiB) == 0);
  CHECK(free_mem() == kBaseFree - 4 * MiB);
  OK(cuMemFree_v2(a));
  CHECK(free_mem() == kBaseFree);

  // An exactly-sized freed range is reused, most recent first.
  OK(cuMemAlloc_v2(&a, 3 * MiB));
  OK(cuMemAlloc_v2(&b, 3 * MiB));
  OK(cuMemFree_v2(a));
  OK(cuMemFree_v2(b));
  OK(cuMemAlloc_v2(&c, 3 * MiB));
  CHECK(c == b);
  OK(cuMemGetAddressRange_v2(&base, &size, c + 100));
  CHECK(base == c && size == 3 * MiB);
  OK(cuMemFree_v2(c));

  size_t pitch = 0;
  OK(cuMemAllocPitch_v2(&a, &pitch, 1000, 10, 4));
  CHECK(pitch == 1024);
  CHECK(free_mem() == kBaseFree - 2 * MiB);  // 10 KiB: one page
  OK(cuMemFree_v2(a));
  CHECK_RC(cuMemAllocPitch_v2(&a, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
  CHECK(free_mem() == kBaseFree);

  // Managed memory: real, lazily backed host memory, not counted against the device.
  CUdeviceptr m = 0;
  OK(cuMemAllocManaged(&m, 64 * GiB, CU_MEM_ATTACH_GLOBAL));
  CHECK(m != 0);
  reinterpret_cast<volatile char *>(m)[0] = 1;
  reinterpret_cast<volatile char *>(m)[64 * GiB - 1] = 2;
  CHECK(free_mem() == kBaseFree);
  OK(cuMemGetAddressRange_v2(&base, &size, m + GiB));
  CHECK(base == m && size == 64 * GiB);
  OK(cuMemFree_v2(m));

  // Pinned host memory: real, page aligned, not counted against the device.
  void *h = nullptr;
  OK(cuMemHostAlloc(&h, 3 * MiB, CU_MEMHOSTALLOC_DEVICEMAP));
  CHECK(h && reinterpret_cast<uintptr_t>(h) % 4096 == 0);
  memset(h, 0xab, 3 * MiB);
  CUdeviceptr hd = 0;
  OK(cuMemHostGetDevicePointer_v2(&hd, static_cast<char *>(h) + 10, 0));
  CHECK(hd == reinterpret_cast<CUdeviceptr>(h) + 10);
  void *h2 = nullptr;
  OK(cuMemAllocHost_v2(&h2, 100));
  CHECK(free_mem() == kBaseFree);
  OK(cuMemFreeHost(h2));
  OK(cuMemFreeHost(h));
  CHECK_RC(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
  std::vector<char> buf(1 << 16);
  OK(cuMemHostRegister_v2(buf.data(), buf.size(), 0));
  CHECK_RC(cuMemHostRegister_v2(buf.data() + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  OK(cuMemHostUnregister(buf.data()));
  CHECK_RC(cuMemHostUnregister(buf.data()), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

  // Arrays count width * height * channels * element size.
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 1024;
  ad.Height = 1024;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 4;
  CUarray arr;
  OK(cuArrayCreate_v2(&arr, &ad));
  CHECK(free_mem() == kBaseFree - 16 * MiB);
  CUDA_ARRAY3D_DESCRIPTOR ad3{};
  ad3.Width = 256;
  ad3.Height = 256;
  ad3.Depth = 16;
  ad3.Format = CU_AD_FORMAT_HALF;
  ad3.NumChannels = 2;
  CUarray arr3;
  OK(cuArray3DCreate_v2(&arr3, &ad3));
  CHECK(free_mem() == kBaseFree - 16 * MiB - 4 * MiB);
  OK(cuArrayDestroy(arr3));
  OK(cuArrayDestroy(arr));
  CHECK_RC(cuArrayDestroy(arr), CUDA_ERROR_INVALID_HANDLE);
  CHECK(free_mem() == kBaseFree);
}

// ---- memory pools ----

cuuint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t v = ~0ull;
  OK(cuMemPoolGetAttribute(pool, attr, &v));
  return v;
}

void test_pools() {
  CUmemoryPool def = nullptr, cur = nullptr;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  OK(cuDeviceGetMemPool(&cur, 0));
  CHECK(def && def == cur);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);

  // Reuse: a freed range serves a smaller request from its start, the rest staying free.
  CUdeviceptr a = 0, b = 0;
  OK(cuMemAllocAsync(&a, 100 * MiB, nullptr));
  CHECK(free_mem() == kBaseFree - 100 * MiB);
  OK(cuMemFreeAsync(a, nullptr));
  CHECK(free_mem() == kBaseFree - 100 * MiB);  // still held by the pool
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 100 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  OK(cuMemAllocAsync_ptsz(&b, 50 * MiB, CU_STREAM_PER_THREAD));
  CHECK(b == a);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 50 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 100 * MiB);
  CHECK(free_mem() == kBaseFree - 100 * MiB);
  OK(cuMemFreeAsync_ptsz(b, CU_STREAM_PER_THREAD));
  OK(cuStreamSynchronize(nullptr));  // threshold 0: everything free goes back
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) == 100 * MiB);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 100 * MiB);
  cuuint64_t zero = 0;
  OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0);
  CHECK_RC(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &zero), CUDA_ERROR_INVALID_VALUE);
  CHECK(free_mem() == kBaseFree);

  // Fragmentation: the pool holds 600 MiB free in two chunks (separate reservations, never
  // merged), yet 400 MiB cannot be had from them.
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  OK(cuMemPoolCreate(&pool, &props));
  CUstream stream = nullptr;
  OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr x = 0, y = 0, z = 0;
  OK(cuMemAllocFromPoolAsync(&x, 300 * MiB, pool, stream));
  OK(cuMemAllocFromPoolAsync_ptsz(&y, 300 * MiB, pool, stream));
  OK(cuMemFreeAsync(x, stream));
  OK(cuMemFreeAsync(y, stream));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 600 * MiB);
  CHECK(free_mem() == kBaseFree - 600 * MiB);
  CHECK_RC(cuMemAllocFromPoolAsync(&z, 400 * MiB, pool, stream), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(free_mem() == kBaseFree - 600 * MiB);
  // TrimTo keeps at least minBytesToKeep reserved: one 300 MiB chunk goes.
  OK(cuMemPoolTrimTo(pool, 250 * MiB));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 300 * MiB);
  OK(cuMemPoolTrimTo(pool, 1 * GiB));  // keeps more than it has: no-op
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 300 * MiB);
  OK(cuMemAllocFromPoolAsync(&z, 400 * MiB, pool, stream));
  CHECK(free_mem() == kBaseFree - 700 * MiB);
  OK(cuMemFreeAsync(z, stream));
  // A high release threshold keeps memory across synchronisation; 0 lets it all go.
  cuuint64_t keep_all = ~0ull;
  OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
  OK(cuStreamSynchronize(stream));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 700 * MiB);
  OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
  OK(cuStreamSynchronize_ptsz(stream));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(free_mem() == kBaseFree);

  // cuDeviceSetMemPool redirects cuMemAllocAsync; destroying a pool with a live block defers.
  OK(cuDeviceSetMemPool(0, pool));
  OK(cuMemAllocAsync(&a, 10 * MiB, stream));
  CHECK(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 10 * MiB);
  OK(cuMemPoolDestroy(pool));
  OK(cuDeviceGetMemPool(&cur, 0));
  CHECK(cur == def);
  CHECK(free_mem() == kBaseFree - 10 * MiB);
  OK(cuMemFreeAsync(a, stream));
  CHECK(free_mem() == kBaseFree);
  CHECK_RC(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuMemAllocFromPoolAsync(&a, 1, pool, stream), CUDA_ERROR_INVALID_VALUE);
  OK(cuStreamDestroy_v2(stream));
  CHECK_RC(cuMemAllocAsync(&a, 1, stream), CUDA_ERROR_INVALID_HANDLE);
}

// ---- VMM ----

void test_vmm() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(gran == 2 * MiB);
  CUmemGenericAllocationHandle h = 0, hh = 0, big = 0;
  CHECK_RC(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuMemCreate(&big, kBaseFree + gran, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
  CHECK(free_mem() == kBaseFree - 4 * MiB);
  CUmemAllocationProp host = prop;
  host.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  OK(cuMemCreate(&hh, 64 * MiB, &host, 0));
  CHECK(free_mem() == kBaseFree - 4 * MiB);  // host memory does not count
  OK(cuMemRelease(hh));

  CUdeviceptr va = 0;
  OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
  CHECK(va != 0 && va % gran == 0);
  OK(cuMemMap(va, 4 * MiB, 0, h, 0));
  OK(cuMemMap(va + 8 * MiB, 2 * MiB, 2 * MiB, h, 0));  // second mapping of the same memory
  CHECK_RC(cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overlaps
  CUmemAccessDesc acc{};
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  OK(cuMemSetAccess(va, 4 * MiB, &acc, 1));
  CHECK_RC(cuMemSetAccess(va, 6 * MiB, &acc, 1), CUDA_ERROR_INVALID_VALUE);  // 4..6 MiB unmapped
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, va + 8 * MiB + 5));
  CHECK(base == va + 8 * MiB && size == 2 * MiB);
  OK(cuMemRelease(h));  // still mapped: the memory stays
  CHECK(free_mem() == kBaseFree - 4 * MiB);
  CHECK_RC(cuMemAddressFree(va, 16 * MiB), CUDA_ERROR_INVALID_VALUE);  // mappings remain
  CHECK_RC(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  // part of a mapping
  OK(cuMemUnmap(va, 4 * MiB));
  CHECK(free_mem() == kBaseFree - 4 * MiB);  // one mapping left
  OK(cuMemUnmap(va + 8 * MiB, 2 * MiB));
  CHECK(free_mem() == kBaseFree);  // last mapping gone: freed
  CHECK_RC(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressFree(va, 16 * MiB));
  // A requested address that is free is honoured.
  CUdeviceptr again = 0;
  OK(cuMemAddressReserve(&again, 16 * MiB, 0, va, 0));
  CHECK(again == va);
  CUdeviceptr other = 0;
  OK(cuMemAddressReserve(&other, 4 * MiB, 0, va, 0));  // taken: the hint is ignored
  CHECK(other != 0 && other != va);
  OK(cuMemAddressFree(other, 4 * MiB));
  OK(cuMemAddressFree(again, 16 * MiB));
}

// ---- context teardown ----

void test_context_teardown(CUcontext primary0) {
  CUcontext ctx = nullptr;
  OK(cuCtxCreate_v4(&ctx, nullptr, 0, 0));
  CUcontext cur = nullptr;
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == ctx);
  CUdeviceptr a, b;
  OK(cuMemAlloc_v2(&a, 100 * MiB));
  OK(cuMemAllocAsync(&b, 10 * MiB, nullptr));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemGenericAllocationHandle h;
  OK(cuMemCreate(&h, 2 * MiB, &prop, 0));
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 1 * MiB;
  ad.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad.NumChannels = 1;
  CUarray arr;
  OK(cuArrayCreate_v2(&arr, &ad));
  void *host;
  OK(cuMemHostAlloc(&host, MiB, 0));
  CHECK(free_mem() == kBaseFree - 114 * MiB);  // 100 + 10 (pool) + 2 (VMM) + a page for the 1 MiB array
  OK(cuCtxDestroy_v2(ctx));
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == primary0);  // the destroyed context was popped
  OK(cuCtxSynchronize());
  CHECK(free_mem() == kBaseFree);
  CHECK_RC(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);  // already gone with its context
  CHECK_RC(cuCtxDestroy_v2(ctx), CUDA_ERROR_CONTEXT_IS_DESTROYED);

  // Push/pop and a destroyed context that is still current elsewhere on the stack.
  OK(cuCtxCreate_v4(&ctx, nullptr, 0, 1));
  CUdevice d;
  OK(cuCtxGetDevice(&d));
  CHECK(d == 1);
  OK(cuCtxGetDevice_v2(&d, primary0));
  CHECK(d == 0);
  OK(cuCtxPopCurrent_v2(&cur));
  CHECK(cur == ctx);
  OK(cuCtxPushCurrent_v2(ctx));
  OK(cuCtxDestroy_v2(ctx));
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == primary0);

  // Device 1's primary context: a reset frees what it owned.
  CUcontext p1;
  OK(cuDevicePrimaryCtxRetain(&p1, 1));
  OK(cuCtxPushCurrent_v2(p1));
  OK(cuMemAlloc_v2(&a, 200 * MiB));
  OK(cuMemAllocAsync(&b, 20 * MiB, nullptr));
  OK(cuMemFreeAsync(b, nullptr));
  CHECK(free_mem() == kBaseFree - 220 * MiB);
  OK(cuDevicePrimaryCtxReset_v2(1));
  unsigned flags;
  int active = 1;
  OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
  CHECK(active == 0);
  CHECK_RC(cuMemAlloc_v2(&a, 1), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  OK(cuDevicePrimaryCtxRetain(&p1, 1));
  CHECK(free_mem() == kBaseFree);
  OK(cuDevicePrimaryCtxRelease_v2(1));
  OK(cuCtxPopCurrent_v2(nullptr));
  OK(cuCtxGetCurrent(&cur));
  CHECK(cur == primary0);
  CHECK(free_mem() == kBaseFree);
}

// ---- cuGetProcAddress ----

constexpr int kUnset = 99;  // "symbolStatus left alone"

void *lookup(const char *name, int version, cuuint64_t flags, CUresult expect, int expect_status) {
  void *fn = reinterpret_cast<void *>(1);
  // Status starts as 99 (no valid value), copied as bytes so no invalid enum is ever loaded.
  static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int));
  CUdriverProcAddressQueryResult st;
  int status = 99;
  memcpy(&st, &status, sizeof st);
  CUresult r = cuGetProcAddress_v2(name, &fn, version, flags, &st);
  memcpy(&status, &st, sizeof st);
  if (r != expect || status != expect_status) {
    fprintf(stderr, "FAIL cuGetProcAddress_v2(\"%s\", %d, %llu) = %d status %d, expected %d status %d\n", name,
            version, static_cast<unsigned long long>(flags), r, status, expect, expect_status);
    g_failures++;
  }
  return fn;
}

void *found(const char *name, int version, cuuint64_t flags) {
  return lookup(name, version, flags, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
}

void test_proc_address(const char *log_path) {
  CHECK(found("cuMemAlloc", 13000, 0) == lib_sym("cuMemAlloc_v2"));
  CHECK(found("cuMemAlloc", 3020, 0) == lib_sym("cuMemAlloc_v2"));
  CHECK(found("cuMemAlloc", 3010, 0) == lib_sym("cuMemAlloc"));
  CHECK(found("cuMemAlloc", 2000, 0) == lib_sym("cuMemAlloc"));
  CHECK(lib_sym("cuMemAlloc") != lib_sym("cuMemAlloc_v2"));
  CHECK(lookup("cuMemAlloc", 1000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) == nullptr);
  CHECK(lookup("cuNoSuchThing", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == nullptr);
  CHECK(lookup("cuMemAlloc_v2", 13000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) == nullptr);
  lookup("cuMemAlloc", 13000, 4, CUDA_ERROR_INVALID_VALUE, kUnset);
  lookup("cuMemAlloc", 13010, 0, CUDA_ERROR_INVALID_VALUE, kUnset);
  void *fn = nullptr;
  OK(cuGetProcAddress_v2("cuMemFree", &fn, 13000, 0, nullptr));  // symbolStatus is optional
  CHECK(fn == lib_sym("cuMemFree_v2"));

  // Flags: 0 and 1 give the legacy variant, 2 the _ptsz one where it exists.
  CHECK(found("cuMemAllocAsync", 13000, 0) == lib_sym("cuMemAllocAsync"));
  CHECK(found("cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == lib_sym("cuMemAllocAsync"));
  CHECK(found("cuMemAllocAsync", 13000, 2) == lib_sym("cuMemAllocAsync_ptsz"));
  CHECK(found("cuMemFreeAsync", 12000, 2) == lib_sym("cuMemFreeAsync_ptsz"));
  CHECK(found("cuMemAllocFromPoolAsync", 11020, 2) == lib_sym("cuMemAllocFromPoolAsync_ptsz"));
  lookup("cuMemAllocAsync", 11010, 2, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(found("cuStreamSynchronize", 7000, 2) == lib_sym("cuStreamSynchronize_ptsz"));
  CHECK(found("cuStreamSynchronize", 6050, 2) == lib_sym("cuStreamSynchronize"));  // no ptsz yet
  CHECK(found("cuMemFree", 13000, 2) == lib_sym("cuMemFree_v2"));  // no ptsz variant at all

  // Other versioned names.
  CHECK(found("cuCtxCreate", 12050, 0) == lib_sym("cuCtxCreate_v4"));
  CHECK(found("cuCtxCreate", 12040, 0) == lib_sym("cuCtxCreate_v3"));
  CHECK(found("cuCtxCreate", 3020, 0) == lib_sym("cuCtxCreate_v2"));
  CHECK(found("cuCtxCreate", 3010, 0) == lib_sym("cuCtxCreate"));  // the CUDA 2.0 variant
  CHECK(lib_sym("cuCtxCreate") != lib_sym("cuCtxCreate_v2"));
  lookup("cuCtxCreate", 1000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // Older variants the CUDA 13 runtime asks for by version.
  CHECK(found("cuDevicePrimaryCtxRelease", 7000, 0) == lib_sym("cuDevicePrimaryCtxRelease"));
  CHECK(found("cuDevicePrimaryCtxReset", 10020, 0) == lib_sym("cuDevicePrimaryCtxReset"));
  CHECK(found("cuDeviceGetUuid", 9020, 0) == lib_sym("cuDeviceGetUuid"));
  CHECK(found("cuIpcOpenMemHandle", 4010, 0) == lib_sym("cuIpcOpenMemHandle"));
  lookup("cuIpcOpenMemHandle", 4000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  {
    auto create_v2 = reinterpret_cast<PFN_cuCtxCreate_v3020>(found("cuCtxCreate", 3020, 0));
    CUcontext c = nullptr, cur = nullptr;
    OK(create_v2(&c, 0, 1));
    OK(cuCtxGetCurrent(&cur));
    CHECK(c && cur == c);
    OK(cuCtxDestroy_v2(c));
  }
  CHECK(found("cuCtxDestroy", 4000, 0) == lib_sym("cuCtxDestroy_v2"));
  CHECK(found("cuMemHostRegister", 6050, 0) == lib_sym("cuMemHostRegister_v2"));
  CHECK(found("cuMemHostRegister", 6000, 0) == lib_sym("cuMemHostRegister"));  // the CUDA 4.0 one
  lookup("cuMemHostRegister", 3020, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(found("cuDevicePrimaryCtxReset", 11000, 0) == lib_sym("cuDevicePrimaryCtxReset_v2"));
  CHECK(found("cuIpcOpenMemHandle", 11000, 0) == lib_sym("cuIpcOpenMemHandle_v2"));
  CHECK(found("cuCtxSynchronize", 12090, 0) == lib_sym("cuCtxSynchronize"));
  CHECK(found("cuCtxSynchronize", 13000, 0) == lib_sym("cuCtxSynchronize_v2"));

  // cudart's self-lookup: cuGetProcAddress resolves to itself, then serves the rest.
  CHECK(found("cuGetProcAddress", 12000, 0) == lib_sym("cuGetProcAddress_v2"));
  void *v1 = found("cuGetProcAddress", 11030, 0);
  CHECK(v1 == lib_sym("cuGetProcAddress"));
  lookup("cuGetProcAddress", 11020, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  auto self = reinterpret_cast<PFN_cuGetProcAddress_v12000>(found("cuGetProcAddress", 13000, 0));
  CUdriverProcAddressQueryResult st;
  OK(self("cuMemAllocAsync", &fn, 13000, 2, &st));
  CHECK(fn == lib_sym("cuMemAllocAsync_ptsz") && st == CU_GET_PROC_ADDRESS_SUCCESS);
  auto old = reinterpret_cast<PFN_cuGetProcAddress_v11030>(v1);
  OK(old("cuMemAlloc", &fn, 11030, 0));
  CHECK(fn == lib_sym("cuMemAlloc_v2"));
  CHECK_RC(old("nothing", &fn, 11030, 0), CUDA_ERROR_NOT_FOUND);

  // Every entry point is reachable by its base name at CUDA 13.0.
  struct Name {
    const char *base, *exported;
    cuuint64_t flags;
  } names[] = {
      {"cuInit", "cuInit", 0}, {"cuDriverGetVersion", "cuDriverGetVersion", 0},
      {"cuDeviceGet", "cuDeviceGet", 0}, {"cuDeviceGetCount", "cuDeviceGetCount", 0},
      {"cuDeviceGetName", "cuDeviceGetName", 0}, {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 0},
      {"cuDeviceGetAttribute", "cuDeviceGetAttribute", 0}, {"cuDeviceGetUuid", "cuDeviceGetUuid_v2", 0},
      {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 0},
      {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 0},
      {"cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 0},
      {"cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", 0}, {"cuCtxCreate", "cuCtxCreate_v4", 0},
      {"cuCtxDestroy", "cuCtxDestroy_v2", 0}, {"cuCtxSetCurrent", "cuCtxSetCurrent", 0},
      {"cuCtxGetCurrent", "cuCtxGetCurrent", 0}, {"cuCtxGetDevice", "cuCtxGetDevice_v2", 0},
      {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", 0}, {"cuCtxPopCurrent", "cuCtxPopCurrent_v2", 0},
      {"cuCtxSynchronize", "cuCtxSynchronize_v2", 0}, {"cuGetProcAddress", "cuGetProcAddress_v2", 0},
      {"cuGetErrorName", "cuGetErrorName", 0}, {"cuGetErrorString", "cuGetErrorString", 0},
      {"cuGetExportTable", "cuGetExportTable", 0}, {"cuMemGetInfo", "cuMemGetInfo_v2", 0},
      {"cuMemGetAddressRange", "cuMemGetAddressRange_v2", 0}, {"cuMemAlloc", "cuMemAlloc_v2", 0},
      {"cuMemAllocPitch", "cuMemAllocPitch_v2", 0}, {"cuMemFree", "cuMemFree_v2", 0},
      {"cuMemAllocManaged", "cuMemAllocManaged", 0}, {"cuMemHostAlloc", "cuMemHostAlloc", 0},
      {"cuMemAllocHost", "cuMemAllocHost_v2", 0}, {"cuMemFreeHost", "cuMemFreeHost", 0},
      {"cuMemHostRegister", "cuMemHostRegister_v2", 0}, {"cuMemHostUnregister", "cuMemHostUnregister", 0},
      {"cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2", 0},
      {"cuMemAllocAsync", "cuMemAllocAsync", 0}, {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", 2},
      {"cuMemFreeAsync", "cuMemFreeAsync", 0}, {"cuMemFreeAsync", "cuMemFreeAsync_ptsz", 2},
      {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 0},
      {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", 2},
      {"cuMemPoolCreate", "cuMemPoolCreate", 0}, {"cuMemPoolDestroy", "cuMemPoolDestroy", 0},
      {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 0}, {"cuMemPoolSetAttribute", "cuMemPoolSetAttribute", 0},
      {"cuMemPoolGetAttribute", "cuMemPoolGetAttribute", 0},
      {"cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 0},
      {"cuDeviceGetMemPool", "cuDeviceGetMemPool", 0}, {"cuDeviceSetMemPool", "cuDeviceSetMemPool", 0},
      {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", 0},
      {"cuMemCreate", "cuMemCreate", 0}, {"cuMemRelease", "cuMemRelease", 0}, {"cuMemMap", "cuMemMap", 0},
      {"cuMemUnmap", "cuMemUnmap", 0}, {"cuMemSetAccess", "cuMemSetAccess", 0},
      {"cuMemAddressReserve", "cuMemAddressReserve", 0}, {"cuMemAddressFree", "cuMemAddressFree", 0},
      {"cuArrayCreate", "cuArrayCreate_v2", 0}, {"cuArray3DCreate", "cuArray3DCreate_v2", 0},
      {"cuArrayDestroy", "cuArrayDestroy", 0}, {"cuIpcGetMemHandle", "cuIpcGetMemHandle", 0},
      {"cuIpcOpenMemHandle", "cuIpcOpenMemHandle_v2", 0}, {"cuIpcCloseMemHandle", "cuIpcCloseMemHandle", 0},
      {"cuStreamCreate", "cuStreamCreate", 0}, {"cuStreamDestroy", "cuStreamDestroy_v2", 0},
      {"cuStreamSynchronize", "cuStreamSynchronize", 0},
      {"cuStreamSynchronize", "cuStreamSynchronize_ptsz", 2},
  };
  for (const Name &n : names) {
    void *want = lib_sym(n.exported);
    void *got = found(n.base, 13000, n.flags);
    if (!want || got != want) {
      fprintf(stderr, "FAIL lookup of %s (flags %llu) did not give exported %s\n", n.base,
              static_cast<unsigned long long>(n.flags), n.exported);
      g_failures++;
    }
  }

  // FAKECUDA_LOG: one line per request.
  FILE *f = fopen(log_path, "r");
  CHECK(f != nullptr);
  if (f) {
    char line[256];
    bool saw = false;
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
      lines++;
      if (strcmp(line, "cuMemAllocAsync 13000 2 0\n") == 0) saw = true;
    }
    fclose(f);
    CHECK(saw);
    CHECK(lines > 80);
  }
}

// ---- IPC ----

void test_ipc() {
  CUdeviceptr a = 0, imp = 0, imp2 = 0;
  OK(cuMemAlloc_v2(&a, 3 * MiB + 5));
  CUipcMemHandle h;
  OK(cuIpcGetMemHandle(&h, a));
  CHECK_RC(cuIpcGetMemHandle(&h, a + 512), CUDA_ERROR_INVALID_VALUE);
  size_t before = free_mem();
  OK(cuIpcOpenMemHandle_v2(&imp, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK(imp != 0 && imp != a);
  CHECK(free_mem() == before);  // the exporter owns the memory
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, imp + 1000));
  CHECK(base == imp && size == 3 * MiB + 5);
  OK(cuIpcOpenMemHandle_v2(&imp2, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK(imp2 == imp);  // same context: refcounted
  CHECK_RC(cuMemFree_v2(imp), CUDA_ERROR_INVALID_VALUE);
  OK(cuIpcCloseMemHandle(imp));
  OK(cuMemGetAddressRange_v2(&base, &size, imp));
  OK(cuIpcCloseMemHandle(imp));
  CHECK_RC(cuMemGetAddressRange_v2(&base, &size, imp), CUDA_ERROR_NOT_FOUND);
  CHECK_RC(cuIpcCloseMemHandle(imp), CUDA_ERROR_INVALID_VALUE);
  CUipcMemHandle junk{};
  CHECK_RC(cuIpcOpenMemHandle_v2(&imp, junk, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(a));
  CHECK(free_mem() == kBaseFree);

  // Memory of device 1 opened in device 0's context is device 1's (cuPointerGetAttribute).
  CUcontext here = nullptr, one = nullptr;
  OK(cuCtxGetCurrent(&here));
  OK(cuDevicePrimaryCtxRetain(&one, 1));
  OK(cuCtxPushCurrent_v2(one));
  OK(cuMemAlloc_v2(&a, 2 * MiB));
  OK(cuIpcGetMemHandle(&h, a));
  OK(cuCtxPopCurrent_v2(nullptr));
  OK(cuIpcOpenMemHandle_v2(&imp, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  int ordinal = -1;
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, imp + 100));
  CHECK(ordinal == 1);
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a));
  CHECK(ordinal == 1);
  CHECK_RC(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_CONTEXT, a), CUDA_ERROR_NOT_SUPPORTED);
  OK(cuIpcCloseMemHandle(imp));
  OK(cuMemFree_v2(a));
  OK(cuDevicePrimaryCtxRelease_v2(1));
  OK(cuCtxGetCurrent(&one));
  CHECK(one == here);
}

// ---- threads ----

void test_threads(CUcontext primary0) {
  std::mutex live_mu;
  std::set<CUdeviceptr> live;  // no two live allocations may share an address
  auto note = [&](CUdeviceptr p, bool add) {
    std::lock_guard<std::mutex> g(live_mu);
    if (add) {
      if (!live.insert(p).second) {
        fprintf(stderr, "FAIL thread test: address %llx handed out twice\n", static_cast<unsigned long long>(p));
        g_failures++;
      }
    } else {
      live.erase(p);
    }
  };
  auto worker = [&](int id) {
    OK(cuCtxSetCurrent(primary0));
    std::mt19937 rng(id);
    std::vector<std::pair<CUdeviceptr, bool>> mine;  // (address, async?)
    CUstream stream = nullptr;
    if (id % 2) OK(cuStreamCreate(&stream, 0));
    for (int i = 0; i < 3000; ++i) {
      if (mine.size() < 16 && rng() % 2) {
        size_t size = 1 + rng() % (256 << 10);
        bool async = rng() % 2;
        CUdeviceptr p = 0;
        CUresult r = async ? cuMemAllocAsync(&p, size, stream) : cuMemAlloc_v2(&p, size);
        if (r != CUDA_SUCCESS) {
          fprintf(stderr, "FAIL thread %d: alloc of %zu returned %d\n", id, size, r);
          g_failures++;
          continue;
        }
        note(p, true);
        mine.emplace_back(p, async);
      } else if (!mine.empty()) {
        size_t k = rng() % mine.size();
        note(mine[k].first, false);
        OK(mine[k].second ? cuMemFreeAsync(mine[k].first, stream) : cuMemFree_v2(mine[k].first));
        mine.erase(mine.begin() + k);
      }
      if (i % 100 == 0) OK(cuStreamSynchronize(stream));
    }
    for (auto &[p, async] : mine) {
      note(p, false);
      OK(async ? cuMemFreeAsync(p, stream) : cuMemFree_v2(p));
    }
    if (stream) OK(cuStreamDestroy_v2(stream));
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(worker, i);
  for (auto &t : threads) t.join();
  OK(cuCtxSynchronize());  // the default pool (threshold 0) gives everything back
  CUmemoryPool def;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
  CHECK(pool_attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
  CHECK(free_mem() == kBaseFree);
  CHECK(live.empty());
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--config-child") == 0) return config_child();
  if (argc > 8 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "share") == 0) return share_child(argv + 3);
  if (argc > 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "contexts") == 0) return contexts_child(argv[3]);

  test_config_parsing();  // child processes; the environment below is for this process

  char log_path[] = "/tmp/fakecuda_selftest_XXXXXX";
  int fd = mkstemp(log_path);
  if (fd >= 0) close(fd);
  setenv("FAKECUDA_DEVICES", "2", 1);
  setenv("FAKECUDA_TOTAL_BYTES", "1GiB", 1);
  setenv("FAKECUDA_FOREIGN_BYTES", "64M", 1);
  setenv("FAKECUDA_LOG", log_path, 1);
  setenv("FAKECUDA_CONTEXT_BYTES", "0", 1);  // context costs: test_context_costs, in children
  unsetenv("FAKECUDA_DRIVER_VERSION");

  test_before_init();
  OK(cuInit(0));
  CUcontext primary0 = nullptr;
  test_devices(&primary0);
  test_capacity();
  test_pools();
  test_vmm();
  test_context_teardown(primary0);
  test_proc_address(log_path);
  test_ipc();
  test_entry_points();
  test_graphs();
  test_capture();
  test_vmm_sharing();
  test_multicast();
  test_pool_ipc();
  test_cross_process();
  test_cuda13_pools();
  test_pool_splitting();
  test_events();
  test_arrays_external();
  test_context_costs();
  test_threads(primary0);
  OK(cuDevicePrimaryCtxRelease_v2(0));
  unlink(log_path);

  if (g_failures) {
    fprintf(stderr, "fakecuda_selftest: %d check(s) failed\n", g_failures.load());
    return 1;
  }
  printf("fakecuda_selftest: all checks passed\n");
  return 0;
}
