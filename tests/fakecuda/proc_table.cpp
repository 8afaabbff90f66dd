// proc_table.cpp — cuGetProcAddress (v1, CUDA 11.3 ABI) and cuGetProcAddress_v2: the
// table {base name, CUDA version the variant appeared in, per-thread-stream variant?,
// implementation}, the version/flag resolution, and the optional FAKECUDA_LOG request log.
// Versions come from the PFN_<name>_v<version>[_ptsz] typedefs of cudaTypedefs.h; every
// entry is compile-time checked against its typedef, so a wrong version or signature
// does not build.
#include "config.h"
#include "fc_legacy.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct Entry {
  const char *name;
  int version;
  bool ptsz;
  void *fn;
};

template <typename Expected, typename Actual>
void *checked(Actual fn) {
  static_assert(std::is_same_v<Expected, Actual>, "entry does not match its cudaTypedefs.h PFN type");
  return reinterpret_cast<void *>(fn);
}

// `base` is stringified and pasted unexpanded, so cuda.h's `#define cuMemFree cuMemFree_v2`
// style macros do not interfere.
#define FC_PROC(base, ver, fn) Entry{#base, ver, false, checked<PFN_##base##_v##ver>(&fn)}
#define FC_PROC_PTSZ(base, ver, fn) Entry{#base, ver, true, checked<PFN_##base##_v##ver##_ptsz>(&fn)}

const std::vector<Entry> &table() {
  // Built on first use: a lookup may come from another library's constructor.
  static const std::vector<Entry> *t = new std::vector<Entry>{
      FC_PROC(cuInit, 2000, cuInit),
      FC_PROC(cuDriverGetVersion, 2020, cuDriverGetVersion),
      FC_PROC(cuDeviceGet, 2000, cuDeviceGet),
      FC_PROC(cuDeviceGetCount, 2000, cuDeviceGetCount),
      FC_PROC(cuDeviceGetName, 2000, cuDeviceGetName),
      FC_PROC(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
      FC_PROC(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
      FC_PROC(cuDeviceGetUuid, 9020, cuDeviceGetUuid),
      FC_PROC(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2),
      FC_PROC(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
      Entry{"cuDevicePrimaryCtxRelease", 7000, false,
            checked<fc::PFN_cuDevicePrimaryCtxRelease_v7000_local>(&cuDevicePrimaryCtxRelease)},
      FC_PROC(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
      FC_PROC(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
      Entry{"cuDevicePrimaryCtxReset", 7000, false,
            checked<fc::PFN_cuDevicePrimaryCtxReset_v7000_local>(&cuDevicePrimaryCtxReset)},
      FC_PROC(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2),
      FC_PROC(cuCtxCreate, 3020, cuCtxCreate_v2),
      FC_PROC(cuCtxCreate, 11040, cuCtxCreate_v3),
      FC_PROC(cuCtxCreate, 12050, cuCtxCreate_v4),
      FC_PROC(cuCtxDestroy, 4000, cuCtxDestroy_v2),
      FC_PROC(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
      FC_PROC(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
      FC_PROC(cuCtxGetDevice, 2000, cuCtxGetDevice),
      FC_PROC(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
      FC_PROC(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
      FC_PROC(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
      FC_PROC(cuCtxSynchronize, 2000, cuCtxSynchronize),
      FC_PROC(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),
      FC_PROC(cuGetProcAddress, 11030, cuGetProcAddress),
      FC_PROC(cuGetProcAddress, 12000, cuGetProcAddress_v2),
      FC_PROC(cuGetErrorName, 6000, cuGetErrorName),
      FC_PROC(cuGetErrorString, 6000, cuGetErrorString),
      FC_PROC(cuGetExportTable, 3000, cuGetExportTable),
      FC_PROC(cuMemGetInfo, 3020, cuMemGetInfo_v2),
      FC_PROC(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
      Entry{"cuMemAlloc", 2000, false, checked<fc::PFN_cuMemAlloc_v2000_local>(&cuMemAlloc)},
      FC_PROC(cuMemAlloc, 3020, cuMemAlloc_v2),
      FC_PROC(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
      FC_PROC(cuMemFree, 3020, cuMemFree_v2),
      FC_PROC(cuMemAllocManaged, 6000, cuMemAllocManaged),
      FC_PROC(cuMemHostAlloc, 2020, cuMemHostAlloc),
      FC_PROC(cuMemAllocHost, 3020, cuMemAllocHost_v2),
      FC_PROC(cuMemFreeHost, 2000, cuMemFreeHost),
      FC_PROC(cuMemHostRegister, 6050, cuMemHostRegister_v2),
      FC_PROC(cuMemHostUnregister, 4000, cuMemHostUnregister),
      FC_PROC(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
      FC_PROC(cuMemAllocAsync, 11020, cuMemAllocAsync),
      FC_PROC_PTSZ(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
      FC_PROC(cuMemFreeAsync, 11020, cuMemFreeAsync),
      FC_PROC_PTSZ(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
      FC_PROC(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
      FC_PROC_PTSZ(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz),
      FC_PROC(cuMemPoolCreate, 11020, cuMemPoolCreate),
      FC_PROC(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
      FC_PROC(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
      FC_PROC(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute),
      FC_PROC(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute),
      FC_PROC(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool),
      FC_PROC(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool),
      FC_PROC(cuDeviceSetMemPool, 11020, cuDeviceSetMemPool),
      FC_PROC(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
      FC_PROC(cuMemCreate, 10020, cuMemCreate),
      FC_PROC(cuMemRelease, 10020, cuMemRelease),
      FC_PROC(cuMemMap, 10020, cuMemMap),
      FC_PROC(cuMemUnmap, 10020, cuMemUnmap),
      FC_PROC(cuMemSetAccess, 10020, cuMemSetAccess),
      FC_PROC(cuMemAddressReserve, 10020, cuMemAddressReserve),
      FC_PROC(cuMemAddressFree, 10020, cuMemAddressFree),
      FC_PROC(cuArrayCreate, 3020, cuArrayCreate_v2),
      FC_PROC(cuArray3DCreate, 3020, cuArray3DCreate_v2),
      FC_PROC(cuArrayDestroy, 2000, cuArrayDestroy),
      FC_PROC(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle),
      Entry{"cuIpcOpenMemHandle", 4010, false,
            checked<fc::PFN_cuIpcOpenMemHandle_v4010_local>(&cuIpcOpenMemHandle)},
      FC_PROC(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2),
      FC_PROC(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle),
      FC_PROC(cuStreamCreate, 2000, cuStreamCreate),
      FC_PROC(cuStreamDestroy, 4000, cuStreamDestroy_v2),
      FC_PROC(cuStreamSynchronize, 2000, cuStreamSynchronize),
      FC_PROC_PTSZ(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
  };
  return *t;
}

// One line per request: name version flags result. Never fails the lookup.
void log_request(const char *symbol, int version, cuuint64_t flags, CUresult result) {
  const std::string &path = fc::config().log_path;
  if (path.empty()) return;
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[512];
  int n = snprintf(line, sizeof line, "%s %d %llu %d\n", symbol && *symbol ? symbol : "\"\"", version,
                   static_cast<unsigned long long>(flags), static_cast<int>(result));
  if (n > 0) {
    ssize_t ignored = write(fd, line, std::min(static_cast<size_t>(n), sizeof line - 1));
    (void)ignored;
  }
  close(fd);
}

CUresult resolve(const char *symbol, void **pfn, int version, cuuint64_t flags,
                 CUdriverProcAddressQueryResult *status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (flags & ~cuuint64_t(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  if (version > fc::config().driver_version) return CUDA_ERROR_INVALID_VALUE;  // as documented
  const bool want_ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
                         !(flags & CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  const Entry *legacy = nullptr, *ptsz = nullptr;
  bool known = false;
  for (const Entry &e : table()) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version > version) continue;
    const Entry *&best = e.ptsz ? ptsz : legacy;
    if (!best || e.version > best->version) best = &e;
  }
  const Entry *hit = want_ptsz && ptsz ? ptsz : legacy;
  if (!hit) {
    if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = hit->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

FC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *symbolStatus) {
  CUresult r = resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
  log_request(symbol, cudaVersion, flags, r);
  return r;
}

FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  CUresult r = resolve(symbol, pfn, cudaVersion, flags, nullptr);
  log_request(symbol, cudaVersion, flags, r);
  return r;
}
