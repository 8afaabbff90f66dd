// PyTorch's view of a report, once the pass is over: which mode its allocator ran in and whether
// the block layer worked (from the records, the allocator's environment and the loaded modules),
// the stacks of its groups symbolized and merged by the user's line, and each PyTorch OOM judged
// in PyTorch's terms with the figures of its own OutOfMemoryError message. Formulas and verdicts:
// docs/metrics.md, "PyTorch".
#pragma once

#include <string>

#include "report_model.h"
#include "symbolizer.h"

namespace vt::analyzer {

// rep->torch's mode and layer; every torch group symbolized and merged by line, cut to `top`; every
// PyTorch OOM judged (judge_torch_oom). After the driver-level OOMs were judged.
void finish_torch(const StackStore& stacks, Symbolizer& sym, size_t top, TraceReport* rep);

// o.torch set: o.causes, o.verdict and o.remedies in PyTorch's terms (replacing the driver-level ones).
void judge_torch_oom(OomReport& o);

// PyTorch's format_size (c10/core/Allocator.h): "512 bytes", "1.50 KiB", "20.00 MiB", "79.15 GiB".
std::string torch_format_size(uint64_t bytes);

// The figures of PyTorch's OutOfMemoryError for this failure, as its message words them: with
// NVML's process list at the failure (nvml_rows, in NVML's order), its sentence for each process
// ("Including non-PyTorch memory, this process has X memory in use." for this one, self_pid).
std::string torch_oom_message(const TorchOomInfo& t, const std::vector<GpuProcess>& nvml_rows, uint64_t self_pid);

}  // namespace vt::analyzer
