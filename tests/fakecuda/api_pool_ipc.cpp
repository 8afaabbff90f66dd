// api_pool_ipc.cpp — sharing stream-ordered memory between processes:
// cuMemPoolExportToShareableHandle / cuMemPoolImportFromShareableHandle (a pool, as a POSIX fd:
// shareable.h) and cuMemPoolExportPointer / cuMemPoolImportPointer (one allocation of it).
//
// Model (cuda.h's documentation): only pools created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
// can be exported. An imported pool cannot allocate; a pointer imported through it is a new
// address here that refers to the exporter's block — the exporter's device memory, counted
// there and not here — freed with cuMemFree/cuMemFreeAsync (re-importing the same pointer in
// the same context returns the same address, reference counted). As with legacy IPC in this
// simulator, a process may import its own exports (single-process tests).
#include "shareable.h"
#include "state.h"

#include <unistd.h>

#include <cstring>

using namespace fc;

namespace {

constexpr char kPtrMagic[8] = {'F', 'C', 'P', 'O', 'O', 'L', 'P', '1'};

struct PtrBody {
  char magic[8];
  uint64_t pid, pool, addr, size;
  int32_t device;
};
static_assert(sizeof(PtrBody) <= sizeof(CUmemPoolPtrExportData));

Pool *find_pool(State &s, CUmemoryPool h) {
  auto it = s.pools.find(h);
  return it == s.pools.end() || it->second.destroyed ? nullptr : &it->second;
}

}  // namespace

namespace fc {

void pool_close_import(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  if (--it->second.import_refs > 0) return;
  s.va.free(it->first, it->second.va_size);
  s.allocs.erase(it);
}

}  // namespace fc

FC_API CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool,
                                                 CUmemAllocationHandleType handleType, unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!handle_out || !p || flags != 0 || p->imported) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !(p->handle_types & handleType))
    return CUDA_ERROR_INVALID_VALUE;  // the pool must have been created for this handle type
  int fd;
  SharedObject *o = shared_create(3, &fd);
  if (!o) return CUDA_ERROR_OUT_OF_MEMORY;
  o->id = reinterpret_cast<uint64_t>(pool);
  o->device = p->device;
  shared_unmap(o);  // the importer reads it; nothing is counted through it
  *static_cast<int *>(handle_out) = fd;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle,
                                                   CUmemAllocationHandleType handleType, unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool_out || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  SharedObject *o = shared_open(static_cast<int>(reinterpret_cast<intptr_t>(handle)), 3);
  if (!o) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t pid = static_cast<uint64_t>(o->pid), exporter_pool = o->id;
  const int device = o->device;
  shared_unmap(o);
  if (device >= static_cast<int>(s.devices.size())) return CUDA_ERROR_INVALID_DEVICE;
  CUmemoryPool h = new_handle_as<CUmemoryPool>(s, 2);
  Pool &p = s.pools[h];
  p.imported = true;
  p.export_pid = pid;
  p.export_pool = exporter_pool;
  p.device = -1;  // holds nothing here
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  *pool_out = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!shareData_out) return CUDA_ERROR_INVALID_VALUE;
  auto it = s.allocs.find(ptr);  // the start of a live allocation of an exportable pool
  if (it == s.allocs.end() || it->second.kind != Kind::PoolBlock) return CUDA_ERROR_INVALID_VALUE;
  Pool *p = find_pool(s, it->second.pool);
  if (!p || !(p->handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
  PtrBody b{};
  memcpy(b.magic, kPtrMagic, sizeof kPtrMagic);
  b.pid = static_cast<uint64_t>(getpid());
  b.pool = reinterpret_cast<uint64_t>(it->second.pool);
  b.addr = ptr;
  b.size = it->second.size;
  b.device = it->second.device;
  memset(shareData_out, 0, sizeof *shareData_out);
  memcpy(shareData_out->reserved, &b, sizeof b);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!ptr_out || !shareData || !p || !p->imported) return CUDA_ERROR_INVALID_VALUE;
  PtrBody b;
  memcpy(&b, shareData->reserved, sizeof b);
  if (memcmp(b.magic, kPtrMagic, sizeof kPtrMagic) != 0 || b.size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (b.pid != p->export_pid || b.pool != p->export_pool) return CUDA_ERROR_INVALID_VALUE;  // another pool's
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  for (auto &[addr, a] : s.allocs) {
    if (a.kind == Kind::PoolImport && a.ctx == ctx && a.import_key == b.addr && a.import_pid == b.pid) {
      a.import_refs++;
      *ptr_out = addr;
      return CUDA_SUCCESS;
    }
  }
  const Bytes va_size = round_up(b.size, kAllocRound);
  CUdeviceptr addr = s.va.alloc(va_size, kAllocRound);
  if (!addr) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc &a = s.allocs[addr];
  a.kind = Kind::PoolImport;
  a.size = b.size;
  a.va_size = va_size;
  a.device = b.device;
  a.ctx = ctx;
  a.pool = pool;
  a.import_refs = 1;
  a.import_key = b.addr;
  a.import_pid = b.pid;
  *ptr_out = addr;
  return CUDA_SUCCESS;
}
