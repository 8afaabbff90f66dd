// A traced program that also is (or meets) a CUPTI client, against the simulated driver and the
// fake libcupti (both linked, as Kineto links libcupti). Usage: cupti_client MODE [LIB]
//   plain  allocate, let vramtrace record for ~350 ms (3 flushes), free
//   late   like plain, then become a CUPTI client mid-run (torch.profiler starting): subscribe,
//          register callbacks, enable kernels, flush; prints what it got, then allocates again
//   window like late, then the client lets go (cuptiUnsubscribe: a torch.profiler window
//          closing), waits for vramtrace to subscribe again and lets it record ~350 ms
//   early  subscribe before the first allocation (a client present when vramtrace starts)
//   dlsym  like late, but finds cuptiSubscribe with dlopen(LIB) + dlsym (JAX/XLA style)
//   nvtx   an NVTX range around the work (NVTX_INJECTION64_PATH set by the test)
//   nvtxext  as NVTX's extension loader does: InitializeInjectionNvtxExtension of the library
//          NVTX_INJECTION64_PATH names (prints its result as nvtx_ext=)
//   env    prints NVTX_INJECTION64_PATH and VRAMTRACE_KERNELS as the program sees them
//   fork   a forked child allocates too (its own trace: CUPTI belongs to the parent)
// Prints "key=value" lines and, at the end, the fake's call log after "log:".
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" const char* fakecupti_log();
extern "C" int fakecupti_subscribed();

namespace {

std::atomic<int> g_client_records{0};
std::atomic<int> g_foreign_buffers{0};  // completed buffers handed to us that we never lent
alignas(8) uint8_t g_client_buffer[1 << 16];

void CUPTIAPI client_request(uint8_t** b, size_t* size, size_t* max) {
  *b = g_client_buffer;
  *size = sizeof g_client_buffer;
  *max = 0;
}
void CUPTIAPI client_done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  if (b != g_client_buffer) {
    g_foreign_buffers++;
    return;
  }
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) g_client_records++;
}
void CUPTIAPI client_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

CUdeviceptr alloc(size_t n) {
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, n) != CUDA_SUCCESS) {
    fprintf(stderr, "cuMemAlloc failed\n");
    exit(2);
  }
  return p;
}

void wait_for_vramtrace() {
  const char* ms = getenv("CLIENT_WAIT_MS");
  int tries = (ms ? atoi(ms) : 3000) / 5;
  for (int i = 0; i < tries && !fakecupti_subscribed(); ++i) usleep(5000);
  printf("vramtrace_subscribed=%d\n", fakecupti_subscribed());
}

CUpti_SubscriberHandle g_handle = nullptr;

int be_client(CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)) {
  CUpti_SubscriberHandle& h = g_handle;
  CUptiResult r = subscribe(&h, client_callback, nullptr);
  printf("client_subscribe=%d\n", int(r));
  printf("client_register=%d\n", int(cuptiActivityRegisterCallbacks(client_request, client_done)));
  printf("client_enable=%d\n", int(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)));
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // a late buffer arrives by now
  printf("client_records=%d\n", g_client_records.load());
  printf("client_foreign_buffers=%d\n", g_foreign_buffers.load());
  return r == CUPTI_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "plain";
  if (mode == "env") {
    const char* n = getenv("NVTX_INJECTION64_PATH");
    const char* k = getenv("VRAMTRACE_KERNELS");
    printf("nvtx=%s\nkernels=%s\n", n ? n : "", k ? k : "");
  }
  int rc = 0;
  if (mode == "early") {
    CUpti_SubscriberHandle h = nullptr;
    printf("client_subscribe=%d\n", int(cuptiSubscribe(&h, client_callback, nullptr)));
  }
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "no device\n");
    return 2;
  }
  if (mode == "nvtx") nvtxRangePushA("setup");
  CUdeviceptr a = alloc(1 << 20);  // the trace opens here, and vramtrace starts CUPTI
  if (mode == "plain" || mode == "late" || mode == "window" || mode == "dlsym" || mode == "nvtx") {
    wait_for_vramtrace();
    usleep(350 * 1000);
  } else {
    usleep(200 * 1000);
  }
  if (mode == "late" || mode == "window") rc = be_client(cuptiSubscribe);
  if (mode == "window") {
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    printf("client_unsubscribe=%d\n", int(cuptiUnsubscribe(g_handle)));
    wait_for_vramtrace();
    usleep(350 * 1000);
  }
  if (mode == "dlsym") {
    void* h = dlopen(argc > 2 ? argv[2] : "libcupti.so.13", RTLD_NOW);
    auto sub = h ? reinterpret_cast<CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)>(
                       dlsym(h, "cuptiSubscribe"))
                 : nullptr;
    rc = sub ? be_client(sub) : 3;
  }
  if (mode == "fork") {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      CUdeviceptr c = alloc(4096);  // the simulated driver has no fork restriction
      cuMemFree(c);
      exit(0);  // runs the exit handlers the parent's vramtrace registered: they must do nothing
    }
    int st = 0;
    waitpid(child, &st, 0);
    printf("child_exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  CUdeviceptr b = alloc(2 << 20);  // memory tracing goes on whatever happened to CUPTI
  cuMemFree(b);
  cuMemFree(a);
  if (mode == "nvtx") nvtxRangePop();
  if (mode == "nvtxext") {
    const char* path = getenv("NVTX_INJECTION64_PATH");
    void* h = path && *path ? dlopen(path, RTLD_LAZY) : nullptr;
    auto ext = h ? reinterpret_cast<int (*)(void*)>(dlsym(h, "InitializeInjectionNvtxExtension")) : nullptr;
    static char module_info[256];
    printf("nvtx_ext=%d\n", ext ? ext(module_info) : -1);
  }
  printf("log:\n%s", fakecupti_log());
  fflush(stdout);
  return rc;
}
