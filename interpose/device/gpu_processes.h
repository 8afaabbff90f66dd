// Who else holds the GPU: the processes NVML sees on a device, with their memory, written to the
// trace (kTagGpuProcesses) right after a failed allocation, so the OOM report can name them, and
// by the sampler thread as soon as a device's first context exists and whenever the other
// processes' memory changes (checked every 250 ms), so a peak's breakdown and a first context's
// cost can take them apart (docs/metrics.md, rule 14). NVML (libnvidia-ml.so.1, or
// VRAMTRACE_NVML_LIBRARY) is loaded by a thread of its own, which the sampler starts once a
// context exists or an allocation has failed (an NVML whose init hangs holds up nothing else) (not before: loading opens descriptors, which at start-up would shift the numbers the
// program's own open()s get; after cuInit the driver's own descriptors have done so already),
// never inside a hook: dlopen takes the loader lock, and a hook may run under an allocator lock
// that a thread holding the loader lock waits for. A failing hook waits for the load at most a
// second, once.
#pragma once

#include <cstdint>

namespace vt {

// Starts the sampler thread (signals blocked): it refreshes the shared-memory summary for
// `vramtrace top` every 250 ms (shm_summary.h) and loads NVML when a failure asks for it.
void start_gpu_process_sampler();
void forget_gpu_process_sampler();  // after fork

// Writes the record for CUDA device `device` at a failure if NVML is ready; otherwise nothing.
void record_gpu_processes(int device, uint64_t t);
// A context was made on CUDA device `device`: the sampler watches the device's other processes
// from now on (and loads NVML if it has not). Lock-free after the device's first time.
void watch_gpu_processes(int device);
// Right after the trace opened (no lock held): the devices whose first context came before it
// get their first list now (waits as watch_gpu_processes does).
void await_first_gpu_process_lists();

}  // namespace vt
