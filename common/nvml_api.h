// The slice of NVML's C API vramtrace calls, declared once because the CUDA toolkit ships no
// nvml.h: the recorder (interpose/device/gpu_processes.cpp: who else holds a GPU at an OOM), `vramtrace
// top` (tools/gpu_info.cpp) and the doctor (doctor/probes/nvml_probe.cpp). Layouts follow nvml.h
// (R470 and later); every function is looked up with dlsym. Header only, no heap: the recorder
// includes it inside the traced process.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace vt::nvml {

using Return = int;  // nvmlReturn_t
using Device = struct opaque_device*;

constexpr Return kSuccess = 0;
constexpr Return kInsufficientSize = 7;
// usedGpuMemory when the driver cannot tell (no permission, another container, Windows WDDM).
constexpr unsigned long long kValueNotAvailable = ~0ull;

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t: nvmlDeviceGet*RunningProcesses
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct ProcessInfoV2 {  // nvmlProcessInfo_v2_t / nvmlProcessInfo_t: the _v2 and _v3 functions
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using StringFn = Return (*)(char*, unsigned int);
using IntFn = Return (*)(int*);
using CountFn = Return (*)(unsigned int*);
using HandleFn = Return (*)(unsigned int, Device*);
using HandleByUuidFn = Return (*)(const char*, Device*);  // uuid as "GPU-xxxxxxxx-xxxx-..."
using DeviceStringFn = Return (*)(Device, char*, unsigned int);
using MemoryFn = Return (*)(Device, Memory*);
using CapabilityFn = Return (*)(Device, int*, int*);
using ProcessesFn = Return (*)(Device, unsigned int*, void*);  // ProcessInfoV1 or V2 by version
using ProcessNameFn = Return (*)(unsigned int, char*, unsigned int);

// The NVML library to dlopen: VRAMTRACE_NVML_LIBRARY (a stand-in, for tests) or the driver's
// libnvidia-ml.so.1. Null when the variable names a path that is not a regular file: dlopen of a
// FIFO blocks in open() (it hung the recorder's NVML thread, and with it `top`), of a device worse.
inline const char* library_to_load() {
  const char* path = getenv("VRAMTRACE_NVML_LIBRARY");
  if (!path || !*path) return "libnvidia-ml.so.1";
  struct stat st;
  if (strchr(path, '/') && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) return nullptr;
  return path;
}

}  // namespace vt::nvml
