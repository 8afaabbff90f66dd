// selftest_sharing.cpp — memory shared between handles and processes: VMM handle reference
// counts (cuMemRetainAllocationHandle), properties, POSIX-fd export/import (same process and,
// through a child process, another one: the memory counts for the exporter once, and lives
// while the importer holds it), multicast objects (no memory of their own, bindings keep memory
// alive, teams across processes), and pool / pool-pointer IPC.
#include "selftest.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace selftest {
namespace {

bool has_memory(CUdeviceptr p) {
  CUdeviceptr base;
  size_t size;
  return cuMemGetAddressRange_v2(&base, &size, p) == CUDA_SUCCESS;
}

CUdeviceptr reserve_and_map(CUmemGenericAllocationHandle h, size_t size, int dev) {
  CUdeviceptr va = 0;
  OK(cuMemAddressReserve(&va, size, 0, 0, 0));
  OK(cuMemMap(va, size, 0, h, 0));
  CUmemAccessDesc acc;
  memset(&acc, 0, sizeof acc);
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = dev;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  OK(cuMemSetAccess(va, size, &acc, 1));
  return va;
}

void unmap_and_free(CUdeviceptr va, size_t size) {
  OK(cuMemUnmap(va, size));
  OK(cuMemAddressFree(va, size));
}

std::string hex(const void *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char *>(p)[i];
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

void unhex(const std::string &s, void *p, size_t n) {
  for (size_t i = 0; i < n && 2 * i + 1 < s.size(); ++i)
    static_cast<unsigned char *>(p)[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
}

bool read_line(int fd, const char *want) {
  char buf[64];
  size_t n = 0;
  while (n + 1 < sizeof buf) {
    if (read(fd, buf + n, 1) != 1) return false;
    if (buf[n++] == '\n') break;
  }
  buf[n] = 0;
  return strncmp(buf, want, strlen(want)) == 0;
}

void say(int fd, const char *what) { (void)!write(fd, what, strlen(what)); }

}  // namespace

void test_vmm_sharing() {
  const size_t base_free = free_mem();
  CUmemAllocationProp prop = device_prop(0, true);
  CUmemGenericAllocationHandle h = 0, retained = 0, imported = 0;
  OK(cuMemCreate(&h, 8 * MiB, &prop, 0));
  CHECK(free_mem() == base_free - 8 * MiB);
  CUmemAllocationProp got;
  memset(&got, 0xff, sizeof got);
  OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
  CHECK(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
        got.location.id == 0 && got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);

  // Reference counts: a retain is one more reference; a release frees only the last one.
  CUdeviceptr va = reserve_and_map(h, 8 * MiB, 0);
  OK(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void *>(va + 3 * MiB)));  // any mapped address
  CHECK(retained == h);  // "the same handle value used to map the memory"
  CHECK_RC(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void *>(va + 9 * MiB)), CUDA_ERROR_INVALID_VALUE);
  unmap_and_free(va, 8 * MiB);
  OK(cuMemRelease(h));
  CHECK(free_mem() == base_free - 8 * MiB);  // the retained reference holds it
  OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
  OK(cuMemRelease(h));
  CHECK(free_mem() == base_free);
  CHECK_RC(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);

  // Export and import in one process: one allocation, counted once, alive while either holds it.
  CUmemAllocationProp plain = device_prop(0, false);
  CUmemGenericAllocationHandle p = 0;
  OK(cuMemCreate(&p, 2 * MiB, &plain, 0));
  int fd = -1;
  CHECK_RC(cuMemExportToShareableHandle(&fd, p, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_ERROR_INVALID_VALUE);  // not created shareable
  CUmemFabricHandle fabric;
  CHECK_RC(cuMemExportToShareableHandle(&fabric, p, CU_MEM_HANDLE_TYPE_FABRIC, 0), CUDA_ERROR_NOT_SUPPORTED);
  OK(cuMemRelease(p));
  prop = device_prop(0, true);
  CHECK_RC(cuMemCreate(&p, 2 * MiB, &(prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC, prop), 0),
           CUDA_ERROR_NOT_SUPPORTED);
  prop = device_prop(0, true);
  OK(cuMemCreate(&h, 16 * MiB, &prop, 0));
  OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CHECK(fd >= 0);
  OK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void *>(static_cast<intptr_t>(fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CHECK(imported != 0 && imported != h);
  CHECK(free_mem() == base_free - 16 * MiB);  // once, not twice
  OK(cuMemGetAllocationPropertiesFromHandle(&got, imported));
  CHECK(got.location.id == 0);
  OK(cuMemRelease(h));
  close(fd);
  CHECK(free_mem() == base_free - 16 * MiB);  // the import holds it
  va = reserve_and_map(imported, 16 * MiB, 0);
  OK(cuMemRelease(imported));
  CHECK(free_mem() == base_free - 16 * MiB);  // the mapping holds it
  unmap_and_free(va, 16 * MiB);
  CHECK(free_mem() == base_free);

  // An exported fd that is still open is a reference too ("once all shareable handles are
  // closed and the allocation is released").
  OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
  OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  OK(cuMemRelease(h));
  CHECK(free_mem() == base_free - 4 * MiB);
  close(fd);
  CHECK(free_mem() == base_free);

  // Not one of ours: refused.
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK_RC(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void *>(static_cast<intptr_t>(null_fd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_ERROR_INVALID_VALUE);
  close(null_fd);
  CHECK_RC(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void *>(intptr_t(-1)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           CUDA_ERROR_INVALID_VALUE);
}

void test_multicast() {
  const size_t base_free = free_mem();
  CUmulticastObjectProp mp;
  memset(&mp, 0, sizeof mp);
  mp.numDevices = 2;
  mp.size = 4 * MiB;
  size_t gran = 0;
  OK(cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_MINIMUM));
  CHECK(gran == 2 * MiB);
  OK(cuMulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED));
  CHECK(gran == 512 * MiB);
  int supported = 0;
  OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
  CHECK(supported == 1);

  CUmemGenericAllocationHandle mc = 0, m0 = 0, m1 = 0;
  mp.size = 3 * MiB;
  CHECK_RC(cuMulticastCreate(&mc, &mp), CUDA_ERROR_INVALID_VALUE);  // not a multiple of the granularity
  mp.size = 4 * MiB;
  OK(cuMulticastCreate(&mc, &mp));
  CHECK(free_mem() == base_free);  // a multicast object holds no memory
  OK(cuMulticastAddDevice(mc, 0));
  CHECK_RC(cuMulticastAddDevice(mc, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMulticastAddDevice(mc, 1));
  CHECK_RC(cuMulticastAddDevice(mc, 1), CUDA_ERROR_INVALID_VALUE);  // the team is complete
  CUmemAllocationProp p0 = device_prop(0, false), p1 = device_prop(1, false);
  OK(cuMemCreate(&m0, 4 * MiB, &p0, 0));
  OK(cuMemCreate(&m1, 4 * MiB, &p1, 0));
  CHECK(free_mem() == base_free - 4 * MiB);  // device 0's share
  CHECK_RC(cuMulticastBindMem(mc, MiB, m0, 0, 2 * MiB, 0), CUDA_ERROR_INVALID_VALUE);  // misaligned
  CHECK_RC(cuMulticastBindMem(mc, 0, m0, 0, 6 * MiB, 0), CUDA_ERROR_INVALID_VALUE);    // larger than both
  OK(cuMulticastBindMem(mc, 0, m0, 0, 4 * MiB, 0));
  CHECK_RC(cuMulticastBindMem(mc, 0, m0, 0, 4 * MiB, 0), CUDA_ERROR_INVALID_VALUE);  // bound there already
  CUdeviceptr uc = reserve_and_map(m1, 4 * MiB, 1);
  OK(cuMulticastBindAddr(mc, 0, uc + 2 * MiB, 2 * MiB, 0));  // device 1's second half
  CUdeviceptr mva = reserve_and_map(mc, 4 * MiB, 0);
  CHECK(free_mem() == base_free - 4 * MiB);  // mapping the multicast object costs nothing

  // A binding keeps memory alive after its handle and mappings are gone; unbinding frees it.
  OK(cuMemRelease(m0));
  CHECK(free_mem() == base_free - 4 * MiB);
  CHECK_RC(cuMulticastUnbind(mc, 0, 0, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  // must match the bind
  OK(cuMulticastUnbind(mc, 0, 0, 4 * MiB));
  CHECK(free_mem() == base_free);
  // Releasing the object (and unmapping it) drops its remaining bindings.
  unmap_and_free(uc, 4 * MiB);
  OK(cuMemRelease(m1));
  OK(cuMemRelease(mc));
  unmap_and_free(mva, 4 * MiB);
  CHECK_RC(cuMulticastAddDevice(mc, 0), CUDA_ERROR_INVALID_VALUE);

  // An exportable multicast object binds only shareable memory.
  mp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  mp.numDevices = 1;
  OK(cuMulticastCreate(&mc, &mp));
  OK(cuMulticastAddDevice(mc, 0));
  OK(cuMemCreate(&m0, 4 * MiB, &p0, 0));
  CHECK_RC(cuMulticastBindMem(mc, 0, m0, 0, 4 * MiB, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemRelease(m0));
  CUmemAllocationProp s0 = device_prop(0, true);
  OK(cuMemCreate(&m0, 4 * MiB, &s0, 0));
  OK(cuMulticastBindMem(mc, 0, m0, 0, 4 * MiB, 0));
  OK(cuMemRelease(m0));
  OK(cuMemRelease(mc));  // the object goes, and with it the binding and the memory
  CHECK(free_mem() == base_free);
  mp.handleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CHECK_RC(cuMulticastCreate(&mc, &mp), CUDA_ERROR_NOT_SUPPORTED);
}

void test_pool_ipc() {
  const size_t base_free = free_mem();
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool closed = nullptr, pool = nullptr, imported = nullptr;
  OK(cuMemPoolCreate(&closed, &props));
  int fd = -1;
  CHECK_RC(cuMemPoolExportToShareableHandle(&fd, closed, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           CUDA_ERROR_INVALID_VALUE);  // not created exportable
  OK(cuMemPoolDestroy(closed));
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr a = 0, imp = 0, imp2 = 0;
  OK(cuMemAllocFromPoolAsync(&a, 6 * MiB, pool, nullptr));
  CHECK(free_mem() == base_free - 6 * MiB);
  OK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  OK(cuMemPoolImportFromShareableHandle(&imported, reinterpret_cast<void *>(static_cast<intptr_t>(fd)),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(fd);
  CUdeviceptr x;
  CHECK_RC(cuMemAllocFromPoolAsync(&x, MiB, imported, nullptr), CUDA_ERROR_INVALID_VALUE);  // imported pools do not allocate
  CUmemPoolPtrExportData data;
  OK(cuMemPoolExportPointer(&data, a));
  CHECK_RC(cuMemPoolExportPointer(&data, a + 512), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemPoolImportPointer(&imp, imported, &data));
  CHECK(imp != 0 && imp != a);
  CHECK(free_mem() == base_free - 6 * MiB);  // the exporter's memory
  CHECK(has_memory(imp + MiB));
  OK(cuMemPoolImportPointer(&imp2, imported, &data));
  CHECK(imp2 == imp);  // same context: reference counted
  CHECK_RC(cuMemPoolImportPointer(&imp2, pool, &data), CUDA_ERROR_INVALID_VALUE);  // not an imported pool
  OK(cuMemFree_v2(imp));
  CHECK(has_memory(imp));
  OK(cuMemFreeAsync(imp, nullptr));
  CHECK(!has_memory(imp));
  OK(cuMemFreeAsync(a, nullptr));
  OK(cuMemPoolDestroy(imported));
  OK(cuMemPoolDestroy(pool));
  CHECK(free_mem() == base_free);
}

// The exporter side of the cross-process test; the importer is child "share" below.
void test_cross_process() {
  const size_t base_free = free_mem();
  CUmemAllocationProp prop = device_prop(0, true);
  CUmemGenericAllocationHandle h = 0, mem = 0, mc = 0;
  OK(cuMemCreate(&h, 64 * MiB, &prop, 0));
  int vmm_fd = -1, pool_fd = -1, mc_fd = -1;
  OK(cuMemExportToShareableHandle(&vmm_fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemoryPool pool;
  OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr block = 0;
  OK(cuMemAllocFromPoolAsync(&block, 8 * MiB, pool, nullptr));
  OK(cuMemPoolExportToShareableHandle(&pool_fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolPtrExportData data;
  OK(cuMemPoolExportPointer(&data, block));
  CUmulticastObjectProp mp;
  memset(&mp, 0, sizeof mp);
  mp.numDevices = 2;  // device 0 here, device 1 in the child
  mp.size = 2 * MiB;
  mp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  OK(cuMulticastCreate(&mc, &mp));
  OK(cuMulticastAddDevice(mc, 0));
  OK(cuMemExportToShareableHandle(&mc_fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  OK(cuMemCreate(&mem, 2 * MiB, &prop, 0));
  CHECK(free_mem() == base_free - 74 * MiB);

  int to_child[2], to_parent[2];
  CHECK(pipe2(to_child, O_CLOEXEC) == 0 && pipe2(to_parent, O_CLOEXEC) == 0);
  int pid = spawn_child({"share", std::to_string(vmm_fd), std::to_string(pool_fd), std::to_string(mc_fd),
                         hex(&data, sizeof data), std::to_string(to_child[0]), std::to_string(to_parent[1])},
                        {"FAKECUDA_LOG="}, {vmm_fd, pool_fd, mc_fd, to_child[0], to_parent[1]});
  CHECK(pid > 0);
  close(to_child[0]);
  close(to_parent[1]);
  CHECK(read_line(to_parent[0], "imported"));
  // The importer holds the memory: releasing and closing everything here frees nothing yet.
  OK(cuMemRelease(h));
  close(vmm_fd);
  close(pool_fd);
  CHECK(free_mem() == base_free - 74 * MiB);
  // The child added device 1: the team is complete and binding does not wait.
  OK(cuMulticastBindMem(mc, 0, mem, 0, 2 * MiB, 0));
  say(to_child[1], "release\n");
  CHECK(read_line(to_parent[0], "released"));
  CHECK(free_mem() == base_free - 10 * MiB);  // the child's release was the last reference
  CHECK(wait_child(pid) == 0);
  close(to_child[1]);
  close(to_parent[0]);
  OK(cuMulticastUnbind(mc, 0, 0, 2 * MiB));
  OK(cuMemRelease(mem));
  close(mc_fd);
  OK(cuMemRelease(mc));
  OK(cuMemFreeAsync(block, nullptr));
  OK(cuMemPoolDestroy(pool));
  CHECK(free_mem() == base_free);
}

// The importer: args are the three fds, the pointer export data in hex, and the two pipe ends.
int share_child(char **args) {
  const int vmm_fd = atoi(args[0]), pool_fd = atoi(args[1]), mc_fd = atoi(args[2]);
  const int from_parent = atoi(args[4]), to_parent = atoi(args[5]);
  CUcontext ctx;
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&ctx, 0));
  OK(cuCtxSetCurrent(ctx));
  const size_t base_free = free_mem();
  CUmemGenericAllocationHandle h = 0, mc = 0;
  OK(cuMemImportFromShareableHandle(&h, reinterpret_cast<void *>(static_cast<intptr_t>(vmm_fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(vmm_fd);
  CHECK(free_mem() == base_free);  // another process's memory: not counted here
  CUmemAllocationProp got;
  OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
  CHECK(got.location.id == 0 && got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr va = reserve_and_map(h, 64 * MiB, 0);
  CHECK(has_memory(va + 60 * MiB));
  CHECK(free_mem() == base_free);
  CUmemoryPool pool;
  OK(cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void *>(static_cast<intptr_t>(pool_fd)),
                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  close(pool_fd);
  CUmemPoolPtrExportData data;
  unhex(args[3], &data, sizeof data);
  CUdeviceptr imp = 0;
  OK(cuMemPoolImportPointer(&imp, pool, &data));
  CUdeviceptr base = 0;
  size_t size = 0;
  OK(cuMemGetAddressRange_v2(&base, &size, imp + 100));
  CHECK(base == imp && size == 8 * MiB);
  CHECK(free_mem() == base_free);
  OK(cuMemImportFromShareableHandle(&mc, reinterpret_cast<void *>(static_cast<intptr_t>(mc_fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  close(mc_fd);
  OK(cuMulticastAddDevice(mc, 1));
  say(to_parent, "imported\n");
  CHECK(read_line(from_parent, "release"));
  OK(cuMemFree_v2(imp));
  OK(cuMemPoolDestroy(pool));
  unmap_and_free(va, 64 * MiB);
  OK(cuMemRelease(h));
  OK(cuMemRelease(mc));
  CHECK(free_mem() == base_free);
  say(to_parent, "released\n");
  return g_failures > 0 ? 1 : 0;
}

}  // namespace selftest
