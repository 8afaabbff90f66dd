// Who else holds the GPU when an allocation fails: the processes NVML sees on the device, with
// their memory, written to the trace right after the failed event (kTagGpuProcesses) so the OOM
// report can name them. NVML (libnvidia-ml.so.1, or VRAMTRACE_NVML_LIBRARY) is loaded at run time
// by a helper thread when the first allocation fails (not before: loading opens descriptors, which
// would shift the numbers the program's own open()s get), never inside a hook: dlopen takes the
// loader lock, and a hook may run under an allocator lock that a thread holding the loader lock
// waits for. The failing hook waits for the load at most a second, once.
#pragma once

#include <cstdint>

namespace vt {

// Starts the sampler thread (signals blocked): it refreshes the shared-memory summary for
// `vramtrace top` every 250 ms (shm_summary.h) and loads NVML when a failure asks for it.
void start_gpu_process_sampler();
void forget_gpu_process_sampler();  // after fork

// Writes the record for CUDA device `device` if NVML is ready; otherwise nothing.
void record_gpu_processes(int device, uint64_t t);

}  // namespace vt
