// Reaches the driver by linking -lcuda and calling the exported names (cuda.h maps cuMemAlloc to
// cuMemAlloc_v2 and so on), like libraries built against the driver API.
#include "workload.h"

int main() {
  Api a{};
  a.init = cuInit;
  a.device_get = cuDeviceGet;
  a.primary_retain = cuDevicePrimaryCtxRetain;
  a.ctx_set_current = cuCtxSetCurrent;
  a.ctx_create = cuCtxCreate;
  a.stream_create = cuStreamCreate;
  a.granularity = cuMemGetAllocationGranularity;
  a.ipc_get = cuIpcGetMemHandle;
  a.mem_alloc = cuMemAlloc;
  a.mem_alloc_pitch = cuMemAllocPitch;
  a.mem_free = cuMemFree;
  a.mem_alloc_managed = cuMemAllocManaged;
  a.mem_host_alloc = cuMemHostAlloc;
  a.mem_alloc_host = cuMemAllocHost;
  a.mem_free_host = cuMemFreeHost;
  a.host_register = cuMemHostRegister;
  a.host_unregister = cuMemHostUnregister;
  a.alloc_async = cuMemAllocAsync;
  a.free_async = cuMemFreeAsync;
  a.alloc_from_pool_async = cuMemAllocFromPoolAsync;
  a.pool_create = cuMemPoolCreate;
  a.pool_destroy = cuMemPoolDestroy;
  a.pool_trim = cuMemPoolTrimTo;
  a.mem_create = cuMemCreate;
  a.mem_release = cuMemRelease;
  a.mem_map = cuMemMap;
  a.mem_unmap = cuMemUnmap;
  a.address_reserve = cuMemAddressReserve;
  a.address_free = cuMemAddressFree;
  a.array_create = cuArrayCreate;
  a.array3d_create = cuArray3DCreate;
  a.array_destroy = cuArrayDestroy;
  a.ipc_open = cuIpcOpenMemHandle;
  a.ipc_close = cuIpcCloseMemHandle;
  a.ctx_destroy = cuCtxDestroy;
  a.primary_reset = cuDevicePrimaryCtxReset;
  return run_workload(a);
}
