// Writes a synthetic but realistic trace through the real recorder (vt::record, linked from
// vramtrace_recorder as the unit tests do): a training-like mix of alloc/free with address reuse,
// stream-ordered and pool allocations, VMM create/map/unmap/release, pinned host buffers, a slow
// leak and failed allocations with free/total, from 4 threads with distinct call sites (the
// workload is in gen_trace_sites.cpp). Stacks follow VRAMTRACE_STACK_DEPTH (default 64; 0 =
// none). A stand-in driver API supplies the process and device records.
//
// Usage: gen_trace OUT_PATH [EVENTS]     (default 50000000 events; OUT_PATH is replaced)
// Prints one line: events, seconds, events/s, bytes per event.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "driver_api.h"
#include "gen_trace_sites.h"
#include "recorder.h"

namespace {

constexpr int kThreads = 4;

// The stand-in driver: one 80 GiB device, as the recorder queries it for its records.
CUresult fake_version(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult fake_count(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fake_get(CUdevice* d, int i) {
  *d = i;
  return CUDA_SUCCESS;
}
CUresult fake_name(char* name, int len, CUdevice) {
  snprintf(name, size_t(len), "Synthetic GPU (gen_trace)");
  return CUDA_SUCCESS;
}
CUresult fake_total(size_t* bytes, CUdevice) {
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}
CUresult fake_uuid(CUuuid* u, CUdevice d) {
  for (int i = 0; i < 16; ++i) u->bytes[i] = char(0x40 + i + d);
  return CUDA_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s OUT_PATH [EVENTS]   (default 50000000)\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  uint64_t events = argc > 2 ? strtoull(argv[2], nullptr, 10) : 50000000ull;
  if (events < kThreads) events = kThreads;

  // The recorder reads its configuration when the first event arrives.
  unlink(path.c_str());
  setenv("VRAMTRACE_OUTPUT", path.c_str(), 1);
  unsetenv("VRAMTRACE_DISABLE");
  unsetenv("VRAMTRACE_SINK");
  vt::DriverApi& api = vt::g_api;
  api.driver_get_version = fake_version;
  api.device_get_count = fake_count;
  api.device_get = fake_get;
  api.device_get_name = fake_name;
  api.device_total_mem = fake_total;
  api.device_get_uuid = fake_uuid;

  std::vector<GenThread> work(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    work[i] = GenThread{};
    work[i].index = i;
    work[i].budget = events / kThreads + (i == kThreads - 1 ? events % kThreads : 0);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(gen_run_thread, &work[i]);
  for (std::thread& t : threads) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  uint64_t emitted = 0, leaked = 0, failed = 0;
  for (const GenThread& w : work) {
    emitted += w.emitted;
    leaked += w.leaked_bytes;
    failed += w.failed;
  }
  if (!vt::recording()) {
    fprintf(stderr, "gen_trace: the recorder did not open %s (see the vramtrace: line above)\n", path.c_str());
    return 1;
  }
  struct stat st;
  uint64_t file_bytes = stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  printf("gen_trace: %llu events (%llu failed, %llu MiB leaked) from %d threads in %.2f s: %.2f M events/s; "
         "file %.1f MiB (%.2f bytes/event)\n",
         static_cast<unsigned long long>(emitted), static_cast<unsigned long long>(failed),
         static_cast<unsigned long long>(leaked >> 20), kThreads, secs, emitted / secs / 1e6,
         file_bytes / 1048576.0, double(file_bytes) / double(emitted ? emitted : 1));
  return 0;  // exit() runs the recorder's clean-close mark
}
