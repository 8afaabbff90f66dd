// Where the doctor looks, and the test hooks that let tests point it at a fake machine:
//   VRAMTRACE_DOCTOR_ROOT     prefix of every absolute search path (/usr/local/cuda, /opt/cuda...)
//   VRAMTRACE_DOCTOR_LIBCUDA  the driver library to dlopen instead of "libcuda.so.1"
//   VRAMTRACE_DOCTOR_LIBNVML  the NVML library to dlopen instead of "libnvidia-ml.so.1"
//   VRAMTRACE_DOCTOR_LIBCUPTI the only CUPTI library to consider (no search)
//   VRAMTRACE_LIBRARY         libvramtrace.so (as `vramtrace run` finds it: common/preload_library.h)
// They are read once, here, so every check sees the same machine.
#pragma once

#include <string>

namespace vt::doctor {

struct Overrides {
  std::string root;
  std::string libcuda = "libcuda.so.1";
  std::string libnvml = "libnvidia-ml.so.1";
  std::string libcupti;  // empty: search the toolkits and the Python environment
  std::string libvramtrace;

  static Overrides from_env();
  // An absolute search path on the (possibly fake) machine.
  std::string rooted(const std::string& abs_path) const { return root + abs_path; }
};

}  // namespace vt::doctor
