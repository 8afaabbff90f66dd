// GPUs and the processes using them, from NVML (libnvidia-ml.so.1, or VRAMTRACE_NVML_LIBRARY),
// loaded at run time. For `vramtrace top`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report_model.h"

namespace vt::cli {

// A process on a GPU and its bytes: the same record the OOM report names other processes with.
using GpuProcessInfo = analyzer::GpuProcess;

struct GpuInfo {
  int index = 0;
  std::string name;
  uint64_t total = 0, used = 0, free = 0;
  std::vector<GpuProcessInfo> processes;
};

// Every GPU NVML sees; empty with a reason in *why when NVML is missing or fails.
std::vector<GpuInfo> read_gpus(std::string* why);

}  // namespace vt::cli
