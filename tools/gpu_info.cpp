// See gpu_info.h.
#include "gpu_info.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace vt::cli {

namespace {

typedef void* nvmlDevice_t;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlProcessInfo_v3 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct Nvml {
  int (*init)();
  int (*count)(unsigned int*);
  int (*by_index)(unsigned int, nvmlDevice_t*);
  int (*name)(nvmlDevice_t, char*, unsigned int);
  int (*memory)(nvmlDevice_t, nvmlMemory_t*);
  int (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v3*);
  bool ok = false;
};

const Nvml& nvml(std::string* why) {
  static Nvml n = [] {
    Nvml x{};
    const char* path = getenv("VRAMTRACE_NVML_LIBRARY");
    void* lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return x;
    x.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    x.count = reinterpret_cast<int (*)(unsigned int*)>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    x.by_index = reinterpret_cast<int (*)(unsigned int, nvmlDevice_t*)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    x.name = reinterpret_cast<int (*)(nvmlDevice_t, char*, unsigned int)>(dlsym(lib, "nvmlDeviceGetName"));
    x.memory = reinterpret_cast<int (*)(nvmlDevice_t, nvmlMemory_t*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    x.processes = reinterpret_cast<int (*)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v3*)>(
        dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    x.ok = x.init && x.count && x.by_index && x.name && x.memory && x.processes && x.init() == 0;
    return x;
  }();
  if (!n.ok) *why = "NVML (libnvidia-ml.so.1) not available: no NVIDIA driver here, GPU totals and other processes unknown";
  return n;
}

std::string comm(unsigned pid) {
  char path[64], name[32] = {};
  snprintf(path, sizeof path, "/proc/%u/comm", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == 0)) --n;
  return std::string(name, n > 0 ? size_t(n) : 0);
}

}  // namespace

std::vector<GpuInfo> read_gpus(std::string* why) {
  std::vector<GpuInfo> out;
  const Nvml& n = nvml(why);
  if (!n.ok) return out;
  unsigned int count = 0;
  if (n.count(&count) != 0) {
    *why = "NVML could not count the GPUs";
    return out;
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t d;
    if (n.by_index(i, &d) != 0) continue;
    GpuInfo g;
    g.index = int(i);
    char name[96] = {};
    if (n.name(d, name, sizeof name) == 0) g.name = name;
    nvmlMemory_t m{};
    if (n.memory(d, &m) == 0) {
      g.total = m.total;
      g.used = m.used;
      g.free = m.free;
    }
    nvmlProcessInfo_v3 procs[128];
    unsigned int np = 128;
    if (n.processes(d, &np, procs) == 0)
      for (unsigned int k = 0; k < np; ++k) g.processes.push_back({procs[k].pid, comm(procs[k].pid), procs[k].usedGpuMemory});
    out.push_back(std::move(g));
  }
  if (out.empty()) *why = "NVML sees no GPU";
  return out;
}

}  // namespace vt::cli
