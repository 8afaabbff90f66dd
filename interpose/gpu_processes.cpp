// See gpu_processes.h.
#include "gpu_processes.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "driver_api.h"
#include "nvml_api.h"
#include "own_work.h"
#include "recorder_internal.h"
#include "shm_summary.h"
#include "meta_records.h"

namespace vt {

namespace {

struct Nvml {
  nvml::InitFn init;
  nvml::HandleByUuidFn by_uuid;
  nvml::ProcessesFn processes;  // the _v3 function: ProcessInfoV2 rows
};
Nvml g_nvml;
std::atomic<bool> g_ready{false};
std::atomic<bool> g_started{false};
std::atomic<bool> g_done{false};  // the loader thread finished, with or without NVML
// NVML is loaded only once an allocation has failed: loading it opens files (and nvmlInit keeps
// descriptors open), which on a thread of ours at start-up raced with the program's own open()s
// and changed the descriptor numbers it got. The sampler thread does the loading (never a
// program thread, which may hold locks the loader's constructors want) when asked.
std::atomic<bool> g_wanted{false};
pthread_mutex_t g_wake_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake;

void* load_nvml_now() {
  const char* path = getenv("VRAMTRACE_NVML_LIBRARY");
  void* lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  Nvml n;
  n.init = reinterpret_cast<nvml::InitFn>(real_dlsym(lib, "nvmlInit_v2"));
  n.by_uuid = reinterpret_cast<nvml::HandleByUuidFn>(real_dlsym(lib, "nvmlDeviceGetHandleByUUID"));
  n.processes = reinterpret_cast<nvml::ProcessesFn>(real_dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (!n.init || !n.by_uuid || !n.processes || n.init() != nvml::kSuccess) return nullptr;
  g_nvml = n;
  g_ready.store(true, std::memory_order_release);
  return nullptr;
}

void init_wake() {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&g_wake, &a);
  pthread_condattr_destroy(&a);
  pthread_mutex_init(&g_wake_mu, nullptr);
}

// The sampler thread: keeps the `vramtrace top` summary fresh every 250 ms, and loads NVML once
// the first failed allocation asks for it.
void* sampler(void*) {
  for (;;) {
    if (g_wanted.load(std::memory_order_acquire) && !g_done.load(std::memory_order_relaxed)) {
      load_nvml_now();
      g_done.store(true, std::memory_order_release);
    }
    update_shm_summary();
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 250000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec += 1, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g_wake_mu);
    if (!g_wanted.load(std::memory_order_relaxed) || g_done.load(std::memory_order_relaxed))
      pthread_cond_timedwait(&g_wake, &g_wake_mu, &until);
    pthread_mutex_unlock(&g_wake_mu);
  }
  return nullptr;
}

}  // namespace

void start_gpu_process_sampler() {
  if (g_started.exchange(true)) return;
  init_wake();
  start_helper_thread(sampler, nullptr);  // (without it, failures just go without NVML's names)
}

void record_gpu_processes(int device, uint64_t t) {
  OwnWork own;  // usleep and /proc reads below are cancellation points
  // The first failure asks the sampler thread to load NVML and waits for it, a second at most
  // (once per process; the loader could itself be waiting for a lock this thread's caller holds,
  // so never longer: that failure then goes without names and a later one gets them).
  if (g_started.load() && !g_done.load(std::memory_order_acquire)) {
    if (!g_wanted.exchange(true, std::memory_order_acq_rel)) {
      pthread_mutex_lock(&g_wake_mu);
      pthread_cond_signal(&g_wake);
      pthread_mutex_unlock(&g_wake_mu);
    }
    for (int i = 0; i < 200 && !g_done.load(std::memory_order_acquire); ++i) usleep(5000);
  }
  if (!g_ready.load(std::memory_order_acquire) || device < 0 || !g_api.device_get || !g_api.device_get_uuid) return;
  CUdevice dev;
  CUuuid u;
  if (g_api.device_get(&dev, device) != CUDA_SUCCESS || g_api.device_get_uuid(&u, dev) != CUDA_SUCCESS) return;
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char uuid[64];
  snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  nvml::Device handle;
  if (g_nvml.by_uuid(uuid, &handle) != nvml::kSuccess) return;
  nvml::ProcessInfoV2 procs[64];
  unsigned int count = 64;
  if (g_nvml.processes(handle, &count, procs) != nvml::kSuccess) return;
  if (count > 64) count = 64;
  uint8_t buf[64 * 48 + 32];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::GpuProcessesSchema>(p, format::GpuProcessesRecord{uint64_t(device), count});
  for (unsigned i = 0; i < count; ++i) {
    char path[64], name[17] = {};
    snprintf(path, sizeof path, "/proc/%u/comm", procs[i].pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, name, 16) : 0;
    if (fd >= 0) close(fd);
    while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == '\0')) --n;
    if (n < 0) n = 0;
    format::encode<format::GpuProcessSchema>(p, format::GpuProcessRow{procs[i].pid, procs[i].usedGpuMemory, format::Text(name, size_t(n))});
  }
  write_meta(format::kTagGpuProcesses, p.data(), p.size(), t);
}

void forget_gpu_process_sampler() {
  // The thread did not survive fork; the child starts its own when its trace opens.
  g_started.store(false);
  g_done.store(false);
  g_wanted.store(false);
}

}  // namespace vt
