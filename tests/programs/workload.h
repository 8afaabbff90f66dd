// The reference workload of the end-to-end tests: every hooked driver operation once, in a fixed
// order, through a table of function pointers that each lookup path fills differently (direct
// link, dlsym(handle), cuGetProcAddress). tests/e2e/ops_test.cpp expects exactly this sequence.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#undef cuGetProcAddress

struct Api {
  // setup (not hooked, except the context creations: recorded with what they cost)
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*primary_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_create)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  CUresult (*ipc_get)(CUipcMemHandle*, CUdeviceptr);
  // hooked
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_alloc_pitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*mem_alloc_managed)(CUdeviceptr*, size_t, unsigned);
  CUresult (*mem_host_alloc)(void**, size_t, unsigned);
  CUresult (*mem_alloc_host)(void**, size_t);
  CUresult (*mem_free_host)(void*);
  CUresult (*host_register)(void*, size_t, unsigned);
  CUresult (*host_unregister)(void*);
  CUresult (*alloc_async)(CUdeviceptr*, size_t, CUstream);
  CUresult (*free_async)(CUdeviceptr, CUstream);
  CUresult (*alloc_from_pool_async)(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  CUresult (*pool_create)(CUmemoryPool*, const CUmemPoolProps*);
  CUresult (*pool_destroy)(CUmemoryPool);
  CUresult (*pool_trim)(CUmemoryPool, size_t);
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*mem_release)(CUmemGenericAllocationHandle);
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*mem_unmap)(CUdeviceptr, size_t);
  CUresult (*address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*address_free)(CUdeviceptr, size_t);
  CUresult (*array_create)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
  CUresult (*array3d_create)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
  CUresult (*array_destroy)(CUarray);
  CUresult (*ipc_open)(CUdeviceptr*, CUipcMemHandle, unsigned);
  CUresult (*ipc_close)(CUdeviceptr);
  CUresult (*ctx_destroy)(CUcontext);
  CUresult (*primary_reset)(CUdevice);
};

#define CHECK(call)                                                               \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                     \
      fprintf(stderr, "%s:%d: %s failed with %d\n", __FILE__, __LINE__, #call, r_); \
      exit(10);                                                                   \
    }                                                                             \
  } while (0)

// Returns 0 on success. Sizes are fixed so the test can assert them.
inline int run_workload(const Api& a) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(a.init(0));
  CHECK(a.device_get(&dev, 0));
  CHECK(a.primary_retain(&ctx, dev));
  CHECK(a.ctx_set_current(ctx));

  CUdeviceptr d1, d2;
  size_t pitch = 0;
  CHECK(a.mem_alloc(&d1, 1 << 20));                      // cuMemAlloc_v2 1 MiB
  CHECK(a.mem_alloc_pitch(&d2, &pitch, 1000, 100, 4));   // cuMemAllocPitch_v2
  CHECK(a.mem_free(d1));
  CHECK(a.mem_free(d2));

  CUdeviceptr m;
  CHECK(a.mem_alloc_managed(&m, 4 << 20, CU_MEM_ATTACH_GLOBAL));
  CHECK(a.mem_free(m));

  void *h1, *h2;
  CHECK(a.mem_host_alloc(&h1, 64 << 10, CU_MEMHOSTALLOC_PORTABLE));
  CHECK(a.mem_free_host(h1));
  CHECK(a.mem_alloc_host(&h2, 32 << 10));
  CHECK(a.mem_free_host(h2));

  static char buffer[8 << 10] __attribute__((aligned(4096)));
  CHECK(a.host_register(buffer, sizeof buffer, 0));
  CHECK(a.host_unregister(buffer));

  CUstream s;
  CHECK(a.stream_create(&s, 0));
  CUdeviceptr as1, as2;
  CHECK(a.alloc_async(&as1, 2 << 20, s));
  CHECK(a.free_async(as1, s));
  CUmemPoolProps pp;
  memset(&pp, 0, sizeof pp);
  pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pp.location.id = 0;
  CUmemoryPool pool;
  CHECK(a.pool_create(&pool, &pp));
  CHECK(a.alloc_from_pool_async(&as2, 3 << 20, pool, s));
  CHECK(a.free_async(as2, s));
  CHECK(a.pool_trim(pool, 0));
  CHECK(a.pool_destroy(pool));

  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CHECK(a.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va;
  CHECK(a.address_reserve(&va, 4 * gran, 0, 0, 0));
  CUmemGenericAllocationHandle handle;
  CHECK(a.mem_create(&handle, gran, &prop, 0));
  CHECK(a.mem_map(va, gran, 0, handle, 0));
  CHECK(a.mem_unmap(va, gran));
  CHECK(a.mem_release(handle));
  CHECK(a.address_free(va, 4 * gran));

  CUDA_ARRAY_DESCRIPTOR ad;
  memset(&ad, 0, sizeof ad);
  ad.Width = 64;
  ad.Height = 64;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 4;
  CUarray arr, arr3;
  CHECK(a.array_create(&arr, &ad));
  CHECK(a.array_destroy(arr));
  CUDA_ARRAY3D_DESCRIPTOR ad3;
  memset(&ad3, 0, sizeof ad3);
  ad3.Width = 32;
  ad3.Height = 32;
  ad3.Depth = 8;
  ad3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  ad3.NumChannels = 1;
  CHECK(a.array3d_create(&arr3, &ad3));
  CHECK(a.array_destroy(arr3));

  CUdeviceptr exported, imported;
  CUipcMemHandle ipc;
  CHECK(a.mem_alloc(&exported, 2 << 20));
  CHECK(a.ipc_get(&ipc, exported));
  CHECK(a.ipc_open(&imported, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK(a.ipc_close(imported));
  CHECK(a.mem_free(exported));

  // A request larger than the device: a failed event with free/total.
  CUdeviceptr huge;
  if (a.mem_alloc(&huge, size_t(1) << 40) != CUDA_ERROR_OUT_OF_MEMORY) {
    fprintf(stderr, "expected CUDA_ERROR_OUT_OF_MEMORY for 1 TiB\n");
    return 11;
  }

  // A second context, torn down with memory still in it.
  CUcontext extra;
  CUdeviceptr in_extra;
  CHECK(a.ctx_create(&extra, nullptr, 0, dev));
  CHECK(a.mem_alloc(&in_extra, 5 << 20));
  CHECK(a.ctx_destroy(extra));
  CHECK(a.ctx_set_current(ctx));
  CUdeviceptr in_primary;
  CHECK(a.mem_alloc(&in_primary, 6 << 20));
  CHECK(a.primary_reset(dev));
  return 0;
}
