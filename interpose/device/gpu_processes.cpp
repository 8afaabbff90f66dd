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

#include "clock.h"
#include "driver_api.h"
#include "nvml_api.h"
#include "own_work.h"
#include "recorder.h"
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
// NVML is loaded only once a context exists or an allocation has failed: loading it opens files
// (and nvmlInit keeps descriptors open), which on a thread of ours at start-up raced with the
// program's own open()s and changed the descriptor numbers it got. A thread of ours does the
// loading (never a program thread, which may hold locks the loader's constructors want).
std::atomic<bool> g_wanted{false};
std::atomic<uint64_t> g_watched{0};   // bit d: CUDA device d has a context (devices 0 to 63)
std::atomic<bool> g_sample_now{false};  // another round is wanted now: no wait before it
std::atomic<uint64_t> g_answered{0};    // bit d: the sampler has asked NVML about device d
pthread_mutex_t g_wake_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_wake;

constexpr int kMaxWatched = 64;
constexpr unsigned kMaxRows = 64;
// The sampler thread's own: what it last wrote per device (the other processes' bytes and rows).
struct LastList {
  bool written = false;
  uint64_t others_bytes = 0, others_rows = 0;
};
LastList g_last[kMaxWatched];

void* load_nvml_now() {
  const char* path = nvml::library_to_load();
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
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

// Another round of the sampler now (or as soon as it is done with the current one).
void kick_sampler() {
  g_sample_now.store(true, std::memory_order_release);
  pthread_mutex_lock(&g_wake_mu);
  pthread_cond_signal(&g_wake);
  pthread_mutex_unlock(&g_wake_mu);
}

// NVML's rows for CUDA device `device` (at most kMaxRows); false when it cannot answer.
bool query_processes(int device, nvml::ProcessInfoV2* procs, unsigned* count) {
  if (!g_ready.load(std::memory_order_acquire) || device < 0 || !g_api.device_get || !g_api.device_get_uuid)
    return false;
  CUdevice dev;
  CUuuid u;
  if (g_api.device_get(&dev, device) != CUDA_SUCCESS || g_api.device_get_uuid(&u, dev) != CUDA_SUCCESS) return false;
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char uuid[64];
  snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  nvml::Device handle;
  if (g_nvml.by_uuid(uuid, &handle) != nvml::kSuccess) return false;
  *count = kMaxRows;
  if (g_nvml.processes(handle, count, procs) != nvml::kSuccess) return false;
  if (*count > kMaxRows) *count = kMaxRows;
  return true;
}

void write_processes(int device, const nvml::ProcessInfoV2* procs, unsigned count, uint64_t t) {
  uint8_t buf[kMaxRows * 48 + 32];
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

// Each watched device's list, written when the other processes' memory changed since the last
// one written (the first always): this process's own row changes with every allocation, and the
// report wants the others.
void sample_watched() {
  const uint64_t watched = g_watched.load(std::memory_order_acquire);
  if (!recording() && tracing_possible()) return;  // the trace is still opening: next round
  struct Answered {  // whatever happens below, the devices were asked about (the waits end)
    uint64_t bits;
    ~Answered() { g_answered.fetch_or(bits, std::memory_order_release); }
  } answered{watched};
  if (!recording()) return;
  const unsigned self = unsigned(process_id());
  for (int d = 0; d < kMaxWatched; ++d) {
    if (!(watched >> d & 1)) continue;
    nvml::ProcessInfoV2 procs[kMaxRows];
    unsigned count = 0;
    if (!query_processes(d, procs, &count)) continue;
    LastList now{true, 0, 0};
    for (unsigned i = 0; i < count; ++i)
      if (procs[i].pid != self) {
        now.others_rows++;
        if (procs[i].usedGpuMemory != nvml::kValueNotAvailable) now.others_bytes += procs[i].usedGpuMemory;
      }
    LastList& last = g_last[d];
    if (last.written && last.others_bytes == now.others_bytes && last.others_rows == now.others_rows) continue;
    OwnWork own;  // the /proc reads are cancellation points
    write_processes(d, procs, count, now_ns());
    last = now;
  }
}

// NVML's own thread: loading it may hang (an init that never returns), and the sampler must go
// on refreshing the `vramtrace top` summary meanwhile.
std::atomic<bool> g_loading{false};
void* loader(void*) {
  load_nvml_now();
  g_done.store(true, std::memory_order_release);
  kick_sampler();  // the lists the waits want
  return nullptr;
}

// The sampler thread: keeps the `vramtrace top` summary fresh every 250 ms, has NVML loaded once
// a context exists or a failed allocation asks for it, and watches the devices' other processes.
void* sampler(void*) {
  for (;;) {
    g_sample_now.store(false, std::memory_order_relaxed);
    // The program's last thread is gone (its main thread left with pthread_exit): without our
    // threads it would have ended, as by exit(0). (A signal sent to it meanwhile finds no thread
    // that takes it: every one of ours blocks them all.) Asked first: a round that answers a
    // program thread's wait (await_lists) ends with the answer, and nothing of ours then runs
    // beside the program (this check may open a file for a moment: after the answer, a program
    // open() right then got another descriptor number).
    if (only_helper_threads_left()) exit(0);
    const bool wanted = g_wanted.load(std::memory_order_acquire) || g_watched.load(std::memory_order_acquire);
    if (wanted && !g_loading.exchange(true, std::memory_order_acq_rel) && !start_helper_thread(loader, nullptr))
      g_done.store(true, std::memory_order_release);  // no thread, no NVML
    if (g_done.load(std::memory_order_acquire)) sample_watched();  // (before that, nothing to ask)
    update_shm_summary();
    timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 250000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec += 1, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g_wake_mu);
    if (!g_sample_now.load(std::memory_order_relaxed)) pthread_cond_timedwait(&g_wake, &g_wake_mu, &until);
    pthread_mutex_unlock(&g_wake_mu);
  }
  return nullptr;
}

// A program thread waits for the sampler until `ready()`, a second at most, and after one wait
// ran out (NVML hangs in its init, or the loader's lock is held by this thread's caller) never
// again: a process loses at most a second to NVML in all.
std::atomic<bool> g_gave_up{false};
template <typename Ready>
void wait_for_sampler(Ready ready) {
  if (g_gave_up.load(std::memory_order_relaxed)) return;
  OwnWork own;  // usleep is a cancellation point
  for (int i = 0; i < 1000; ++i) {  // (1 ms steps: a list usually takes about that long)
    if (ready()) return;
    usleep(1000);
  }
  g_gave_up.store(true, std::memory_order_relaxed);
}

// A device's first list must follow its first context closely (a short program may end before
// the next 250 ms round): the sampler is woken and waited for. Once per device.
void await_lists(uint64_t bits) {
  auto answered = [bits] { return (g_answered.load(std::memory_order_acquire) & bits) == bits; };
  if (answered()) return;
  kick_sampler();
  wait_for_sampler([&] {
    return answered() || (g_done.load(std::memory_order_acquire) && !g_ready.load(std::memory_order_acquire));  // no NVML
  });
}

}  // namespace

void start_gpu_process_sampler() {
  if (g_started.exchange(true)) return;
  init_wake();
  start_helper_thread(sampler, nullptr);  // (without it, failures just go without NVML's names)
}

void record_gpu_processes(int device, uint64_t t) {
  OwnWork own;  // usleep and /proc reads below are cancellation points
  // The first failure while NVML is not loaded yet asks the sampler thread to load it and waits
  // for it (wait_for_sampler: the loader could itself be waiting for a lock this thread's caller
  // holds, or NVML hang in its init); that failure may then go without names, and a later one
  // gets them once NVML is there.
  if (g_started.load() && !g_done.load(std::memory_order_acquire) && !g_wanted.exchange(true, std::memory_order_acq_rel)) {
    kick_sampler();
    wait_for_sampler([] { return g_done.load(std::memory_order_acquire); });
  }
  nvml::ProcessInfoV2 procs[kMaxRows];
  unsigned count = 0;
  if (query_processes(device, procs, &count)) write_processes(device, procs, count, t);
}

void watch_gpu_processes(int device) {
  if (device < 0 || device >= kMaxWatched) return;
  const uint64_t bit = uint64_t(1) << device;
  if (g_watched.load(std::memory_order_relaxed) & bit) return;
  g_watched.fetch_or(bit, std::memory_order_acq_rel);
  if (g_started.load(std::memory_order_acquire)) await_lists(bit);
}

void await_first_gpu_process_lists() {
  if (const uint64_t bits = g_watched.load(std::memory_order_acquire)) await_lists(bits);
}

void forget_gpu_process_sampler() {
  // The thread did not survive fork; the child starts its own when its trace opens.
  g_started.store(false);
  g_done.store(false);
  g_ready.store(false);    // NVML is not asked across fork: the child initializes it again
  g_loading.store(false);  // the child loads its own (its loader thread, if any, is gone)
  g_wanted.store(false);
  g_watched.store(0);  // (CUDA does not work in a forked child until it makes its own)
  g_answered.store(0);
  g_gave_up.store(false);
  for (LastList& l : g_last)
    if (l.written || l.others_bytes || l.others_rows) l = LastList{};
}

}  // namespace vt
