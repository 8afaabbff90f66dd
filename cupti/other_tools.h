// Is another CUDA tool attached to this process? Nsight Systems, Nsight Compute,
// compute-sanitizer and cuda-gdb's profiling all inject through CUDA_INJECTION64_PATH (the
// driver loads that library at cuInit) and take CUPTI for themselves; Nsight Systems also sets
// NSYS_* variables and points NVTX_INJECTION64_PATH at its own library. When any of these is
// present, vramtrace leaves CUPTI alone from the start (cuptiSubscribe would also fail with
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, which is the second line of defence).
#pragma once

#include <cstddef>

namespace vt::cupti {

// Looks through `envp` (NAME=value strings, null-terminated). Returns true and the variable's
// name in out[cap] when another tool is present. NVTX_INJECTION64_PATH naming libvramtrace or a
// libcupti is ours (vramtrace run sets it), not another tool.
bool other_tool_in_env(const char* const* envp, char* out, size_t cap);

}  // namespace vt::cupti
