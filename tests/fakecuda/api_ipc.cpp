// api_ipc.cpp — CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle_v2, cuIpcCloseMemHandle.
// The 64-byte handle carries the exporting allocation (pid, address, size, device). An import is a
// fresh synthetic address that is not counted as this process's memory (the exporter owns
// it); reopening a handle in the same context returns the same address, refcounted.
// Unlike the real driver, a process may open its own handles (single-process tests).
#include "state.h"

#include <unistd.h>

#include <cstring>

using namespace fc;

namespace {

constexpr char kMagic[8] = {'F', 'A', 'K', 'E', 'C', 'U', 'D', 'A'};

struct HandleBody {
  char magic[8];
  uint64_t pid, addr, size;
  int32_t device;
};
static_assert(sizeof(HandleBody) <= sizeof(CUipcMemHandle));

}  // namespace

namespace fc {

void ipc_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.allocs.begin(); it != s.allocs.end();) {
    if ((it->second.kind == Kind::IpcImport || it->second.kind == Kind::PoolImport) && it->second.ctx == ctx) {
      s.va.free(it->first, it->second.va_size);
      it = s.allocs.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace fc

FC_API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pHandle) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  auto it = s.allocs.find(dptr);  // only the base of a cuMemAlloc allocation can be exported
  if (it == s.allocs.end() || it->second.kind != Kind::Device) return CUDA_ERROR_INVALID_VALUE;
  HandleBody b{};
  memcpy(b.magic, kMagic, sizeof kMagic);
  b.pid = static_cast<uint64_t>(getpid());
  b.addr = dptr;
  b.size = it->second.size;
  b.device = it->second.device;
  memset(pHandle, 0, sizeof *pHandle);
  memcpy(pHandle->reserved, &b, sizeof b);
  return CUDA_SUCCESS;
}

FC_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pdptr || (Flags & ~unsigned(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  HandleBody b;
  memcpy(&b, handle.reserved, sizeof b);
  if (memcmp(b.magic, kMagic, sizeof kMagic) != 0 || b.size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (auto &[addr, a] : s.allocs) {
    if (a.kind == Kind::IpcImport && a.ctx == ctx && a.import_key == b.addr && a.import_pid == b.pid) {
      a.import_refs++;
      *pdptr = addr;
      return CUDA_SUCCESS;
    }
  }
  const Bytes va_size = round_up(b.size, kAllocRound);
  CUdeviceptr addr = s.va.alloc(va_size, kAllocRound);
  if (!addr) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc &a = s.allocs[addr];
  a.kind = Kind::IpcImport;
  a.size = b.size;
  a.va_size = va_size;
  // The exporter's device (the simulation's processes number devices alike); mapped in this context.
  a.device = b.device >= 0 && b.device < static_cast<int>(s.devices.size()) ? b.device : s.ctxs[ctx].device;
  a.ctx = ctx;
  a.import_refs = 1;
  a.import_key = b.addr;
  a.import_pid = b.pid;
  *pdptr = addr;
  return CUDA_SUCCESS;
}

FC_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end() || it->second.kind != Kind::IpcImport) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.import_refs == 0) {
    s.va.free(dptr, it->second.va_size);
    s.allocs.erase(it);
  }
  return CUDA_SUCCESS;
}
