// Api field -> exact exported name, base name for cuGetProcAddress, and whether vramtrace hooks it.
#pragma once
#include <cstddef>
#include "workload.h"

struct ApiName {
  size_t offset;
  const char* exact;
  const char* base;
  bool hooked;
};

#define API_ENTRY(field, exact, base, hooked) {offsetof(Api, field), exact, base, hooked}
static const ApiName kApiNames[] = {
    API_ENTRY(init, "cuInit", "cuInit", false),
    API_ENTRY(device_get, "cuDeviceGet", "cuDeviceGet", false),
    API_ENTRY(primary_retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", true),
    API_ENTRY(ctx_set_current, "cuCtxSetCurrent", "cuCtxSetCurrent", false),
    API_ENTRY(ctx_create, "cuCtxCreate_v4", "cuCtxCreate", true),
    API_ENTRY(stream_create, "cuStreamCreate", "cuStreamCreate", false),
    API_ENTRY(granularity, "cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", false),
    API_ENTRY(ipc_get, "cuIpcGetMemHandle", "cuIpcGetMemHandle", true),
    API_ENTRY(mem_alloc, "cuMemAlloc_v2", "cuMemAlloc", true),
    API_ENTRY(mem_alloc_pitch, "cuMemAllocPitch_v2", "cuMemAllocPitch", true),
    API_ENTRY(mem_free, "cuMemFree_v2", "cuMemFree", true),
    API_ENTRY(mem_alloc_managed, "cuMemAllocManaged", "cuMemAllocManaged", true),
    API_ENTRY(mem_host_alloc, "cuMemHostAlloc", "cuMemHostAlloc", true),
    API_ENTRY(mem_alloc_host, "cuMemAllocHost_v2", "cuMemAllocHost", true),
    API_ENTRY(mem_free_host, "cuMemFreeHost", "cuMemFreeHost", true),
    API_ENTRY(host_register, "cuMemHostRegister_v2", "cuMemHostRegister", true),
    API_ENTRY(host_unregister, "cuMemHostUnregister", "cuMemHostUnregister", true),
    API_ENTRY(alloc_async, "cuMemAllocAsync", "cuMemAllocAsync", true),
    API_ENTRY(free_async, "cuMemFreeAsync", "cuMemFreeAsync", true),
    API_ENTRY(alloc_from_pool_async, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", true),
    API_ENTRY(pool_create, "cuMemPoolCreate", "cuMemPoolCreate", true),
    API_ENTRY(pool_destroy, "cuMemPoolDestroy", "cuMemPoolDestroy", true),
    API_ENTRY(pool_trim, "cuMemPoolTrimTo", "cuMemPoolTrimTo", true),
    API_ENTRY(mem_create, "cuMemCreate", "cuMemCreate", true),
    API_ENTRY(mem_release, "cuMemRelease", "cuMemRelease", true),
    API_ENTRY(mem_map, "cuMemMap", "cuMemMap", true),
    API_ENTRY(mem_unmap, "cuMemUnmap", "cuMemUnmap", true),
    API_ENTRY(address_reserve, "cuMemAddressReserve", "cuMemAddressReserve", true),
    API_ENTRY(address_free, "cuMemAddressFree", "cuMemAddressFree", true),
    API_ENTRY(array_create, "cuArrayCreate_v2", "cuArrayCreate", true),
    API_ENTRY(array3d_create, "cuArray3DCreate_v2", "cuArray3DCreate", true),
    API_ENTRY(array_destroy, "cuArrayDestroy", "cuArrayDestroy", true),
    API_ENTRY(ipc_open, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle", true),
    API_ENTRY(ipc_close, "cuIpcCloseMemHandle", "cuIpcCloseMemHandle", true),
    API_ENTRY(ctx_destroy, "cuCtxDestroy_v2", "cuCtxDestroy", true),
    API_ENTRY(primary_reset, "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset", true),
};
#undef API_ENTRY

inline void*& api_slot(Api& a, const ApiName& n) { return *reinterpret_cast<void**>(reinterpret_cast<char*>(&a) + n.offset); }
