// Shared memory on the simulated driver, linked with -lcuda (tests/e2e/sharing_test.cpp runs it
// under libvramtrace.so and checks the report against the figures printed here: the driver's
// used memory from cuMemGetInfo, and the sizes this program chose).
//   vmm        a 4 MiB VMM allocation exported (POSIX fd) and imported back (a second handle,
//              mapped: the import's size), retained through its address, released once (the
//              retained reference keeps it: still allocated at exit); a 2 MiB cuMemAlloc shared
//              with cuIpcGetMemHandle and cuMemGetHandleForAddressRange, opened with
//              cuIpcOpenMemHandle, then freed; a pool exported with one pointer imported and
//              closed; the CUDA 4.0 cuMemHostRegister. The imports stay open at exit.
//   multicast  an 8 MiB multicast object for a team of one: 4 MiB bound with cuMulticastBindMem,
//              2 MiB with cuMulticastBindAddr (then unbound), the object mapped; a second one
//              created and released. Left at exit: the first object, its 4 MiB binding and both
//              physical allocations.
//   external   8 MiB of external memory (a memfd as an opaque fd): a 4 MiB buffer and a
//              2-level mipmapped array mapped from it, the object destroyed (the mappings stay);
//              a 4-level mipmapped array of this process's own; a sparse array mapping
//              (cuMemMapArrayAsync, which the simulator does not model).
// No context is torn down at the end: what is live at exit is what the report's leaks and
// imports must show. Prints "name value" lines (bytes or counts).
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "primary_context.h"

#undef cuMemHostRegister
extern "C" CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);  // the 4.0 export

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "sharing: %s failed: %d\n", what, int(r));
    exit(1);
  }
}

constexpr size_t MiB = 1 << 20;

size_t used() {
  size_t free_b = 0, total = 0;
  check(cuMemGetInfo(&free_b, &total), "cuMemGetInfo");
  return total - free_b;
}

CUmemAllocationProp device_prop() {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

void access(CUdeviceptr va, size_t n) {
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = 0;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(va, n, &a, 1), "cuMemSetAccess");
}

int vmm_mode() {
  const size_t base = used();
  CUmemAllocationProp prop = device_prop();
  CUmemGenericAllocationHandle h;
  check(cuMemCreate(&h, 4 * MiB, &prop, 0), "cuMemCreate");
  CUdeviceptr va;
  check(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, 4 * MiB, 0, h, 0), "cuMemMap");
  access(va, 4 * MiB);
  int fd = -1;
  check(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
  CUmemGenericAllocationHandle imported;
  check(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(intptr_t(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "cuMemImportFromShareableHandle");
  check(cuMemMap(va + 4 * MiB, 4 * MiB, 0, imported, 0), "cuMemMap (import)");
  // A reference through the address (PyTorch's IPC of expandable segments, NCCL's registration).
  CUmemGenericAllocationHandle retained;
  check(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(va)), "cuMemRetainAllocationHandle");
  printf("retained_same_handle %d\n", retained == h ? 1 : 0);
  check(cuMemUnmap(va, 8 * MiB), "cuMemUnmap");
  check(cuMemRelease(h), "cuMemRelease");  // the retained reference remains: not freed
  check(cuMemAddressFree(va, 8 * MiB), "cuMemAddressFree");
  close(fd);
  printf("vmm_left %zu\n", used() - base);  // the retained handle's memory

  // Legacy IPC of a cuMemAlloc, and a DMA-BUF of it.
  CUdeviceptr b;
  check(cuMemAlloc(&b, 2 * MiB), "cuMemAlloc");
  CUipcMemHandle ipc;
  check(cuIpcGetMemHandle(&ipc, b), "cuIpcGetMemHandle");
  int dmabuf = -1;
  check(cuMemGetHandleForAddressRange(&dmabuf, b, 2 * MiB, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
        "cuMemGetHandleForAddressRange");
  close(dmabuf);
  CUdeviceptr opened;
  check(cuIpcOpenMemHandle(&opened, ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
  printf("peak_own %zu\n", 4 * MiB + 2 * MiB);  // the VMM allocation and the cuMemAlloc, together
  check(cuMemFree(b), "cuMemFree");

  // A pool shared with a pointer of it.
  CUmemPoolProps pp;
  memset(&pp, 0, sizeof pp);
  pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pp.location.id = 0;
  pp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool;
  check(cuMemPoolCreate(&pool, &pp), "cuMemPoolCreate");
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr p;
  check(cuMemAllocFromPoolAsync(&p, 1 * MiB, pool, s), "cuMemAllocFromPoolAsync");
  int pool_fd = -1;
  check(cuMemPoolExportToShareableHandle(&pool_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemPoolExportToShareableHandle");
  CUmemoryPool peer;
  check(cuMemPoolImportFromShareableHandle(&peer, reinterpret_cast<void*>(intptr_t(pool_fd)),
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemPoolImportFromShareableHandle");
  CUmemPoolPtrExportData data;
  check(cuMemPoolExportPointer(&data, p), "cuMemPoolExportPointer");
  CUdeviceptr q;
  check(cuMemPoolImportPointer(&q, peer, &data), "cuMemPoolImportPointer");
  check(cuMemFree(q), "cuMemFree (imported pointer)");
  check(cuMemFreeAsync(p, s), "cuMemFreeAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuStreamDestroy(s), "cuStreamDestroy");
  close(pool_fd);

  // Host memory pinned through the CUDA 4.0 export.
  void* host = aligned_alloc(4096, 1 * MiB);
  check(cuMemHostRegister(host, 1 * MiB, 0), "cuMemHostRegister");
  check(cuMemHostUnregister(host), "cuMemHostUnregister");
  free(host);

  printf("imported_open %zu\n", 4 * MiB + 2 * MiB);  // the VMM import and the IPC import
  printf("imports_open 2\n");
  printf("imported_max %zu\n", 4 * MiB + 2 * MiB + 1 * MiB);  // with the pool pointer, while it was open
  printf("shared_allocations 3\nshared_bytes %zu\n", 4 * MiB + 2 * MiB + 1 * MiB);  // VMM, cuMemAlloc (once), pool block
  printf("export_calls 5\n");
  return 0;
}

// An 8 MiB multicast object of a team of one (device 0), and the properties of the memory bound to it.
CUmulticastObjectProp multicast_of_one(CUmemGenericAllocationHandle* mc, CUmemAllocationProp* prop) {
  CUmulticastObjectProp mp;
  memset(&mp, 0, sizeof mp);
  mp.numDevices = 1;
  mp.size = 8 * MiB;
  check(cuMulticastCreate(mc, &mp), "cuMulticastCreate");
  check(cuMulticastAddDevice(*mc, 0), "cuMulticastAddDevice");
  *prop = device_prop();
  prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return mp;
}

int multicast_mode() {
  const size_t base = used();
  CUmemGenericAllocationHandle mc;
  CUmemAllocationProp prop;
  const CUmulticastObjectProp mp = multicast_of_one(&mc, &prop);
  CUmemGenericAllocationHandle m1, m2;
  check(cuMemCreate(&m1, 4 * MiB, &prop, 0), "cuMemCreate");
  check(cuMemCreate(&m2, 2 * MiB, &prop, 0), "cuMemCreate");
  check(cuMulticastBindMem(mc, 0, m1, 0, 4 * MiB, 0), "cuMulticastBindMem");
  CUdeviceptr va;
  check(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, 2 * MiB, 0, m2, 0), "cuMemMap");
  access(va, 2 * MiB);
  check(cuMulticastBindAddr(mc, 4 * MiB, va, 2 * MiB, 0), "cuMulticastBindAddr");
  check(cuMemMap(va + 8 * MiB, 8 * MiB, 0, mc, 0), "cuMemMap (multicast)");  // the team's address
  access(va + 8 * MiB, 8 * MiB);
  printf("used_all %zu\n", used() - base);  // the bound memory only: the object costs nothing
  check(cuMulticastUnbind(mc, 0, 4 * MiB, 2 * MiB), "cuMulticastUnbind");

  CUmulticastObjectProp small = mp;
  small.size = 2 * MiB;
  CUmemGenericAllocationHandle mc2;
  check(cuMulticastCreate(&mc2, &small), "cuMulticastCreate");
  check(cuMemRelease(mc2), "cuMemRelease (multicast)");
  printf("physical %zu\n", 6 * MiB);
  printf("multicast_objects 2\nmulticast_bytes %zu\n", 10 * MiB);
  printf("multicast_live 1\nmulticast_live_bytes %zu\nmulticast_bound %zu\n", 8 * MiB, 4 * MiB);
  return 0;
}

// Memory released while bound stays until its unbind (or its object's release): 4 MiB bound with
// cuMulticastBindMem and released at once, a 1 MiB cuMemAlloc beside it, then the unbind; 2 MiB
// bound by address, unmapped and released, then the object released (mapped by nothing).
int multicast_released_mode() {
  const size_t base = used();
  CUmemGenericAllocationHandle mc;
  CUmemAllocationProp prop;
  multicast_of_one(&mc, &prop);
  CUmemGenericAllocationHandle m1, m2;
  check(cuMemCreate(&m1, 4 * MiB, &prop, 0), "cuMemCreate");
  check(cuMulticastBindMem(mc, 0, m1, 0, 4 * MiB, 0), "cuMulticastBindMem");
  check(cuMemRelease(m1), "cuMemRelease (bound)");
  CUdeviceptr p;
  check(cuMemAlloc(&p, 1 * MiB), "cuMemAlloc");
  printf("used_bound_released %zu\n", used() - base);  // the driver: still allocated
  check(cuMulticastUnbind(mc, 0, 0, 4 * MiB), "cuMulticastUnbind");
  printf("used_unbound %zu\n", used() - base);
  check(cuMemCreate(&m2, 2 * MiB, &prop, 0), "cuMemCreate");
  CUdeviceptr va;
  check(cuMemAddressReserve(&va, 2 * MiB, 0, 0, 0), "cuMemAddressReserve");
  check(cuMemMap(va, 2 * MiB, 0, m2, 0), "cuMemMap");
  check(cuMulticastBindAddr(mc, 4 * MiB, va, 2 * MiB, 0), "cuMulticastBindAddr");
  check(cuMemUnmap(va, 2 * MiB), "cuMemUnmap");
  check(cuMemRelease(m2), "cuMemRelease (bound)");
  printf("used_bound_by_address %zu\n", used() - base);
  check(cuMemRelease(mc), "cuMemRelease (multicast)");
  printf("used_end %zu\n", used() - base);
  check(cuMemFree(p), "cuMemFree");
  return 0;
}

uint64_t levels_bytes(size_t w, size_t h, size_t d, unsigned channels, unsigned element, unsigned levels) {
  uint64_t sum = 0;
  for (unsigned l = 0; l < levels; ++l) {
    sum += uint64_t(w ? w : 1) * (h ? h : 1) * (d ? d : 1) * channels * element;
    w = w > 1 ? w / 2 : w;
    h = h > 1 ? h / 2 : h;
    d = d > 1 ? d / 2 : d;
  }
  return sum;
}

int external_mode() {
  int fd = memfd_create("sharing-external", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 8 * MiB) != 0) return 3;
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd;
  memset(&hd, 0, sizeof hd);
  hd.type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
  hd.handle.fd = fd;  // the driver owns it from here
  hd.size = 8 * MiB;
  CUexternalMemory ext;
  check(cuImportExternalMemory(&ext, &hd), "cuImportExternalMemory");
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd;
  memset(&bd, 0, sizeof bd);
  bd.offset = 0;
  bd.size = 4 * MiB;
  CUdeviceptr buf;
  check(cuExternalMemoryGetMappedBuffer(&buf, ext, &bd), "cuExternalMemoryGetMappedBuffer");
  CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC md;
  memset(&md, 0, sizeof md);
  md.offset = 4 * MiB;
  md.arrayDesc.Width = 64;
  md.arrayDesc.Height = 64;
  md.arrayDesc.Format = CU_AD_FORMAT_FLOAT;
  md.arrayDesc.NumChannels = 4;
  md.numLevels = 2;
  CUmipmappedArray ext_mip;
  check(cuExternalMemoryGetMappedMipmappedArray(&ext_mip, ext, &md), "cuExternalMemoryGetMappedMipmappedArray");
  check(cuDestroyExternalMemory(ext), "cuDestroyExternalMemory");  // the mappings stay

  CUDA_ARRAY3D_DESCRIPTOR ad;
  memset(&ad, 0, sizeof ad);
  ad.Width = 128;
  ad.Height = 128;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  CUmipmappedArray own, gone;
  check(cuMipmappedArrayCreate(&own, &ad, 4), "cuMipmappedArrayCreate");
  check(cuMipmappedArrayCreate(&gone, &ad, 1), "cuMipmappedArrayCreate");
  check(cuMipmappedArrayDestroy(gone), "cuMipmappedArrayDestroy");
  CUresult r = cuMemMapArrayAsync(nullptr, 0, nullptr);  // sparse arrays: not simulated
  printf("map_array_result %d\n", int(r));
  printf("imported_open %llu\n", (unsigned long long)(4 * MiB + levels_bytes(64, 64, 0, 4, 4, 2)));
  printf("imports_open 2\n");
  printf("own_mipmap %llu\n", (unsigned long long)levels_bytes(128, 128, 0, 1, 4, 4));
  printf("peak_own %llu\n", (unsigned long long)(levels_bytes(128, 128, 0, 1, 4, 4) + levels_bytes(128, 128, 0, 1, 4, 1)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  make_primary_context_current(check);
  return mode == "vmm"         ? vmm_mode()
         : mode == "multicast" ? multicast_mode()
         : mode == "multicast-released" ? multicast_released_mode()
         : mode == "external"  ? external_mode()
                               : 2;
}
