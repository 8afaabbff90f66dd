// See gpu_info.h.
#include "gpu_info.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "nvml_api.h"

namespace vt::cli {

namespace {

struct Nvml {
  nvml::InitFn init;
  nvml::CountFn count;
  nvml::HandleFn by_index;
  nvml::DeviceStringFn name;
  nvml::MemoryFn memory;
  nvml::ProcessesFn processes;  // the _v3 function: ProcessInfoV2 rows
  bool ok = false;
};

const Nvml& nvml(std::string* why) {
  static Nvml n = [] {
    Nvml x{};
    const char* path = nvml::library_to_load();
    void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!lib) return x;
    x.init = reinterpret_cast<nvml::InitFn>(dlsym(lib, "nvmlInit_v2"));
    x.count = reinterpret_cast<nvml::CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
    x.by_index = reinterpret_cast<nvml::HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    x.name = reinterpret_cast<nvml::DeviceStringFn>(dlsym(lib, "nvmlDeviceGetName"));
    x.memory = reinterpret_cast<nvml::MemoryFn>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    x.processes = reinterpret_cast<nvml::ProcessesFn>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    x.ok = x.init && x.count && x.by_index && x.name && x.memory && x.processes && x.init() == nvml::kSuccess;
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
  if (n.count(&count) != nvml::kSuccess) {
    *why = "NVML could not count the GPUs";
    return out;
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvml::Device d;
    if (n.by_index(i, &d) != nvml::kSuccess) continue;
    GpuInfo g;
    g.index = int(i);
    char name[96] = {};
    if (n.name(d, name, sizeof name) == nvml::kSuccess) g.name = name;
    nvml::Memory m{};
    if (n.memory(d, &m) == nvml::kSuccess) {
      g.total = m.total;
      g.used = m.used;
      g.free = m.free;
    }
    nvml::ProcessInfoV2 procs[128];
    unsigned int np = 128;
    if (n.processes(d, &np, procs) == nvml::kSuccess)
      for (unsigned int k = 0; k < np; ++k) g.processes.push_back({procs[k].pid, comm(procs[k].pid), procs[k].usedGpuMemory});
    out.push_back(std::move(g));
  }
  if (out.empty()) *why = "NVML sees no GPU";
  return out;
}

}  // namespace vt::cli
