// api_device.cpp — driver initialisation and device queries: cuInit, cuDriverGetVersion,
// cuDeviceGet*, cuDeviceTotalMem_v2, cuDeviceGetAttribute, cuDeviceGetUuid_v2, and
// cuGetExportTable (cudart's private tables cannot be faked); and fakecuda_process_used_bytes,
// no driver entry point: this process's usage for the fake NVML (tests/fakenvml).
#include "config.h"
#include "state.h"

#include <algorithm>
#include <cstring>

using namespace fc;

namespace {


// Values of an H200 where they are cheap to state; every other attribute reads 0.
int attribute_value(CUdevice_attribute a, int dev) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
      return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: return 0;  // no IMEX channel
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: return 1;           // HGX H200: NVSwitch
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + dev;
    default: return 0;
  }
}

}  // namespace

FC_API CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const Config &cfg = config();
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (s.initialized) return CUDA_SUCCESS;
  if (cfg.devices == 0) return CUDA_ERROR_NO_DEVICE;
  s.devices.resize(cfg.devices);
  for (int i = 0; i < cfg.devices; ++i) {
    Device &d = s.devices[i];
    d.total = cfg.total_bytes;
    d.foreign = cfg.foreign_bytes;
    // The primary context exists from the start but is inactive until retained.
    d.primary = reinterpret_cast<CUcontext>(new_handle(s, 1));
    Ctx &c = s.ctxs[d.primary];
    c.device = i;
    c.primary = true;
    c.alive = false;
  }
  s.initialized = true;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = config().driver_version;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, ordinal)) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetCount(int *count) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(s.devices.size());
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  const std::string &device_name = config().device_name;
  size_t n = std::min(static_cast<size_t>(len) - 1, device_name.size());
  memcpy(name, device_name.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *bytes = s.devices[dev].total;
  return CUDA_SUCCESS;
}

// What this process holds on `device` (everything cuMemGetInfo counts as used except the
// foreign bytes: contexts, code, allocation pages, pools, VMM and graph memory), as NVML's
// usedGpuMemory of a real GPU counts it; 0 when no context of the process lives there (NVML
// lists only processes with one). Not a driver entry point: the fake NVML asks for it, so its
// row for the calling process matches the simulated device.
FC_API unsigned long long fakecuda_process_used_bytes(int device) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (require_init(s) || check_device(s, device)) return 0;
  bool context = false;
  for (const auto &[handle, c] : s.ctxs) context |= c.alive && c.device == device;
  return context ? s.devices[device].used : 0;
}

FC_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *pi = attribute_value(attrib, dev);
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  static const char prefix[15] = "fakecuda-vtrc";  // stable across runs, unique per device
  memcpy(uuid->bytes, prefix, 15);
  uuid->bytes[15] = static_cast<char>(dev);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  if (ppExportTable) *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}
