// Where the doctor looks, and the test hooks that let tests point it at a fake machine:
//   VRAMTRACE_DOCTOR_ROOT     prefix of every absolute search path (/usr/local/cuda, /opt/cuda...)
//   VRAMTRACE_DOCTOR_LIBCUDA  the driver library to dlopen instead of "libcuda.so.1"
//   VRAMTRACE_DOCTOR_LIBNVML  the NVML library to dlopen instead of "libnvidia-ml.so.1"
//   VRAMTRACE_DOCTOR_LIBCUPTI the only CUPTI library to consider (no search)
//   VRAMTRACE_LIBRARY         libvramtrace.so (shared with `vramtrace run`)
// They are read once, here, so every check sees the same machine.
#pragma once

#include <string>

namespace vt::doctor {

struct Hooks {
  std::string root;
  std::string libcuda = "libcuda.so.1";
  std::string libnvml = "libnvidia-ml.so.1";
  std::string libcupti;  // empty: search the toolkits and the Python environment
  std::string libvramtrace;

  static Hooks from_env();
  // An absolute search path on the (possibly fake) machine.
  std::string rooted(const std::string& abs_path) const { return root + abs_path; }
};

// libvramtrace.so beside the running binary (bin/ -> ../lib), as `vramtrace run` finds it.
std::string default_library_path();

}  // namespace vt::doctor
