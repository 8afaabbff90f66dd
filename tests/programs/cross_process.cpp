// Memory shared between two traced processes on the simulated driver, linked with -lcuda
// (tests/e2e/cross_process_test.cpp runs it under libvramtrace.so and checks both traces).
//   cross_process export KIND [keep] [dev1]
// The exporter allocates 4 MiB and shares it, then fork+execs itself as the importer and hands
// it the handle over a unix socket, as NCCL does: the POSIX fd with SCM_RIGHTS, the handle bytes
// (CUipcMemHandle, CUmemPoolPtrExportData) as the message. KIND:
//   vmm   cuMemCreate (POSIX fd handle type), mapped, cuMemExportToShareableHandle; the importer
//         cuMemImportFromShareableHandle, reserves, maps, sets access, then unmaps, releases, frees
//   ipc   cuMemAlloc + cuIpcGetMemHandle; the importer cuIpcOpenMemHandle, then cuIpcCloseMemHandle
//   pool  a pool created for POSIX fds, a 4 MiB cuMemAllocFromPoolAsync, the pool exported
//         (fd) and the pointer (cuMemPoolExportPointer); the importer imports both, then cuMemFree
//         and cuMemPoolDestroy of the imported pool
// The importer also allocates 1 MiB of its own (cuMemAlloc, freed before it exits) and "uses"
// what it imported (cuMemGetAddressRange: the size the driver gives it). With `keep` it leaves
// the import open at exit (no release, unmap or close). With `dev1` the exporter's memory is on
// device 1 (FAKECUDA_DEVICES=2) while the importer's context is on device 0. The exporter frees its memory only once
// the importer has exited. Prints "name value" lines, the importer's prefixed `importer_`, the
// exporter's `exporter_` (the importer finishes before the exporter prints).
#include <cuda.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "primary_context.h"

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cross_process[%d]: %s failed: %d\n", int(getpid()), what, int(r));
    exit(1);
  }
}
void check_sys(bool ok, const char* what) {
  if (!ok) {
    perror(what);
    exit(1);
  }
}

constexpr size_t MiB = 1 << 20;
constexpr size_t kShared = 4 * MiB, kOwn = 1 * MiB;

size_t used() {
  size_t f = 0, t = 0;
  check(cuMemGetInfo(&f, &t), "cuMemGetInfo");
  return t - f;
}

// One message: up to 64 bytes of handle and at most one descriptor.
struct Message {
  unsigned char bytes[64];
};
static_assert(sizeof(CUipcMemHandle) == 64 && sizeof(CUmemPoolPtrExportData) == 64);

void send_message(int sock, const Message& m, int fd) {
  iovec iov{const_cast<Message*>(&m), sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  check_sys(sendmsg(sock, &h, 0) == ssize_t(sizeof m), "sendmsg");
}

Message receive_message(int sock, int* fd) {
  Message m{};
  iovec iov{&m, sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  check_sys(recvmsg(sock, &h, MSG_CMSG_CLOEXEC) == ssize_t(sizeof m), "recvmsg");
  *fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(fd, CMSG_DATA(c), sizeof *fd);
  return m;
}

CUmemAllocationProp device_prop(int dev) {
  CUmemAllocationProp p;
  memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return p;
}

void map_rw(CUdeviceptr va, size_t n, CUmemGenericAllocationHandle h, int dev) {
  check(cuMemMap(va, n, 0, h, 0), "cuMemMap");
  CUmemAccessDesc a;
  memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.location.id = dev;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(cuMemSetAccess(va, n, &a, 1), "cuMemSetAccess");
}

size_t range_of(CUdeviceptr p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  check(cuMemGetAddressRange(&base, &size, p), "cuMemGetAddressRange");
  return size;
}

int importer(int sock, const std::string& kind, bool keep) {
  const size_t base = used();
  CUdeviceptr own;
  check(cuMemAlloc(&own, kOwn), "cuMemAlloc (own)");
  int fd = -1;
  Message m = receive_message(sock, &fd);
  size_t seen = 0;
  if (kind == "vmm") {
    check_sys(fd >= 0, "no descriptor came");
    CUmemGenericAllocationHandle h;
    check(cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(intptr_t(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
          "cuMemImportFromShareableHandle");
    close(fd);  // the handle keeps the memory
    CUdeviceptr va;
    check(cuMemAddressReserve(&va, kShared, 0, 0, 0), "cuMemAddressReserve");
    map_rw(va, kShared, h, 0);
    seen = range_of(va);
    printf("importer_used_while_imported %zu\n", used() - base);
    if (!keep) {
      check(cuMemUnmap(va, kShared), "cuMemUnmap");
      check(cuMemRelease(h), "cuMemRelease");
      check(cuMemAddressFree(va, kShared), "cuMemAddressFree");
    }
  } else if (kind == "ipc") {
    CUipcMemHandle h;
    memcpy(&h, m.bytes, sizeof h);
    CUdeviceptr p;
    check(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
    seen = range_of(p);
    printf("importer_used_while_imported %zu\n", used() - base);
    if (!keep) check(cuIpcCloseMemHandle(p), "cuIpcCloseMemHandle");
  } else if (kind == "pool") {
    check_sys(fd >= 0, "no descriptor came");
    CUmemoryPool pool;
    check(cuMemPoolImportFromShareableHandle(&pool, reinterpret_cast<void*>(intptr_t(fd)),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "cuMemPoolImportFromShareableHandle");
    close(fd);
    CUmemPoolPtrExportData d;
    memcpy(&d, m.bytes, sizeof d);
    CUdeviceptr p;
    check(cuMemPoolImportPointer(&p, pool, &d), "cuMemPoolImportPointer");
    seen = range_of(p);
    printf("importer_used_while_imported %zu\n", used() - base);
    if (!keep) {
      check(cuMemFree(p), "cuMemFree (imported pointer)");
      check(cuMemPoolDestroy(pool), "cuMemPoolDestroy (imported pool)");  // a pool this trace saw no creation of
    }
  } else {
    return 2;
  }
  check(cuMemFree(own), "cuMemFree (own)");
  printf("importer_pid %d\nimporter_seen_bytes %zu\nimporter_own_bytes %zu\n", int(getpid()), seen, kOwn);
  fflush(stdout);
  const char done = 'd';
  check_sys(write(sock, &done, 1) == 1, "write");
  return 0;
}

int exporter(const char* self, const std::string& kind, bool keep, int dev) {
  if (dev != 0) {
    CUcontext other;
    check(cuDevicePrimaryCtxRetain(&other, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(other), "cuCtxSetCurrent");
  }
  const size_t base = used();
  Message m{};
  int fd = -1;
  // What the exporter frees once the importer is gone.
  CUmemGenericAllocationHandle vmm = 0;
  CUdeviceptr va = 0, dptr = 0;
  CUmemoryPool pool = nullptr;
  CUstream s = nullptr;
  if (kind == "vmm") {
    CUmemAllocationProp prop = device_prop(dev);
    check(cuMemCreate(&vmm, kShared, &prop, 0), "cuMemCreate");
    check(cuMemAddressReserve(&va, kShared, 0, 0, 0), "cuMemAddressReserve");
    map_rw(va, kShared, vmm, dev);
    check(cuMemExportToShareableHandle(&fd, vmm, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "cuMemExportToShareableHandle");
  } else if (kind == "ipc") {
    check(cuMemAlloc(&dptr, kShared), "cuMemAlloc");
    CUipcMemHandle h;
    check(cuIpcGetMemHandle(&h, dptr), "cuIpcGetMemHandle");
    memcpy(m.bytes, &h, sizeof h);
  } else if (kind == "pool") {
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    pp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    check(cuMemPoolCreate(&pool, &pp), "cuMemPoolCreate");
    check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuMemAllocFromPoolAsync(&dptr, kShared, pool, s), "cuMemAllocFromPoolAsync");
    check(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "cuMemPoolExportToShareableHandle");
    CUmemPoolPtrExportData d;
    check(cuMemPoolExportPointer(&d, dptr), "cuMemPoolExportPointer");
    memcpy(m.bytes, &d, sizeof d);
  } else {
    return 2;
  }
  const size_t used_shared = used() - base;

  int sv[2];
  check_sys(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  fflush(stdout);
  pid_t child = fork();
  check_sys(child >= 0, "fork");
  if (child == 0) {
    fcntl(sv[1], F_SETFD, 0);  // the importer's end survives the exec
    const std::string sock = std::to_string(sv[1]);
    const char* argv[] = {self, "import", sock.c_str(), kind.c_str(), keep ? "keep" : nullptr, nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(argv));
    _exit(127);
  }
  close(sv[1]);
  send_message(sv[0], m, fd);
  if (fd >= 0) close(fd);  // the importer holds its own descriptor now
  char done = 0;
  const bool acked = read(sv[0], &done, 1) == 1;
  int status = 0;
  check_sys(waitpid(child, &status, 0) == child, "waitpid");
  if (!acked || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "cross_process: the importer failed (status %d)\n", status);
    return 1;
  }
  close(sv[0]);

  if (kind == "vmm") {
    check(cuMemUnmap(va, kShared), "cuMemUnmap");
    check(cuMemRelease(vmm), "cuMemRelease");
    check(cuMemAddressFree(va, kShared), "cuMemAddressFree");
  } else if (kind == "ipc") {
    check(cuMemFree(dptr), "cuMemFree");
  } else {
    check(cuMemFreeAsync(dptr, s), "cuMemFreeAsync");
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
    check(cuStreamDestroy(s), "cuStreamDestroy");
    check(cuMemPoolDestroy(pool), "cuMemPoolDestroy");
  }
  printf("exporter_pid %d\nexporter_shared_bytes %zu\nexporter_used_shared %zu\nexporter_device %d\n", int(getpid()),
         kShared, used_shared, dev);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  make_primary_context_current(check);
  // No context teardown at the end: what is open at exit is what the reports must show.
  bool keep = false;
  int where = 0;
  for (int i = 3; i < argc; ++i) {
    keep = keep || std::string(argv[i]) == "keep";
    if (std::string(argv[i]) == "dev1") where = 1;
  }
  if (role == "export" && argc >= 3) return exporter(argv[0], argv[2], keep, where);
  if (role == "import" && argc >= 4) return importer(atoi(argv[2]), argv[3], argc > 4 && std::string(argv[4]) == "keep");
  return 2;
}
