// api_external.cpp — memory of other APIs (Vulkan, OpenGL, DMA-BUF exporters):
// cuImportExternalMemory, cuExternalMemoryGetMappedBuffer, cuExternalMemoryGetMappedMipmappedArray,
// cuDestroyExternalMemory; and the other direction, cuMemGetHandleForAddressRange (a DMA-BUF fd
// for a range of device memory).
//
// Model (cuda.h's documentation): on Linux an opaque or DMA-BUF file descriptor is imported and
// its ownership passes to the driver (closed at cuDestroyExternalMemory). The memory belongs to
// the exporting API, so importing and mapping it takes nothing from the device in this process's
// accounting; a mapped buffer is a new device address that must be freed with cuMemFree, and
// destroying the external memory object does not free its mappings.
#include "state.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace fc;

namespace fc {

void external_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.external.begin(); it != s.external.end();) {
    if (it->second.ctx == ctx) {
      if (it->second.fd >= 0) close(it->second.fd);
      it = s.external.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.allocs.begin(); it != s.allocs.end();) {
    if (it->second.kind == Kind::ExternalBuffer && it->second.ctx == ctx) {
      s.va.free(it->first, it->second.va_size);
      it = s.allocs.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace fc

FC_API CUresult cuImportExternalMemory(CUexternalMemory *extMem_out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *memHandleDesc) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!extMem_out || !memHandleDesc || memHandleDesc->size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  switch (memHandleDesc->type) {
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD:
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD: break;
    case CU_EXTERNAL_MEMORY_HANDLE_TYPE_NVSCIBUF: return CUDA_ERROR_NOT_SUPPORTED;  // Tegra / DRIVE OS
    default: return CUDA_ERROR_INVALID_VALUE;  // Windows and Direct3D handles
  }
  const int fd = memHandleDesc->handle.fd;
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return CUDA_ERROR_INVALID_VALUE;
  CUexternalMemory h = new_handle_as<CUexternalMemory>(s, 15);
  s.external[h] = ExternalMemory{memHandleDesc->size, fd, ctx};
  *extMem_out = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr *devPtr, CUexternalMemory extMem,
                                                const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *bufferDesc) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.external.find(extMem);
  if (!devPtr || !bufferDesc || it == s.external.end() || bufferDesc->flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const ExternalMemory &e = it->second;
  if (bufferDesc->size == 0 || bufferDesc->offset > e.size || bufferDesc->size > e.size - bufferDesc->offset)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  const Bytes va_size = round_up(bufferDesc->size, kAllocRound);
  CUdeviceptr addr = s.va.alloc(va_size, kAllocRound);
  if (!addr) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc &a = s.allocs[addr];
  a.kind = Kind::ExternalBuffer;
  a.size = bufferDesc->size;
  a.va_size = va_size;
  a.device = s.ctxs[ctx].device;
  a.ctx = ctx;
  *devPtr = addr;
  return CUDA_SUCCESS;
}

FC_API CUresult cuExternalMemoryGetMappedMipmappedArray(CUmipmappedArray *mipmap, CUexternalMemory extMem,
                                                        const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC *mipmapDesc) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.external.find(extMem);
  if (!mipmap || !mipmapDesc || it == s.external.end() || mipmapDesc->offset >= it->second.size)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  return mipmapped_create(s, ctx, mipmapDesc->arrayDesc, mipmapDesc->numLevels, false, mipmap);
}

FC_API CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.external.find(extMem);
  if (it == s.external.end()) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.fd >= 0) close(it->second.fd);  // the driver owned it
  s.external.erase(it);  // mapped buffers stay until cuMemFree, as documented
  return CUDA_SUCCESS;
}

// A DMA-BUF file descriptor for [dptr, dptr + size) of one cuMemAlloc allocation: a memfd here
// (nothing reads it); it takes no device memory. Host-page-aligned, as cuda.h requires.
FC_API CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType handleType,
                                              unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  const Bytes page = static_cast<Bytes>(sysconf(_SC_PAGESIZE));
  if (!handle || size == 0 || dptr % page || size % page || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD ||
      (flags & ~static_cast<unsigned long long>(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)))
    return CUDA_ERROR_INVALID_VALUE;
  auto it = s.allocs.upper_bound(dptr);
  if (it == s.allocs.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (it->second.kind != Kind::Device || dptr + size > it->first + it->second.size) return CUDA_ERROR_INVALID_VALUE;
  const int fd = memfd_create("fakecuda-dmabuf", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int *>(handle) = fd;
  return CUDA_SUCCESS;
}
