// The OOM remedies that name an allocator setting (`PYTORCH_CUDA_ALLOC_CONF=...`), each tried on
// the run itself: the trace replayed under it (whatif.h), and the remedy then cites the figure
// ("vramtrace whatif: peak reserved 1.46 GiB instead of 760 MiB; this OOM would not have happened").
// Only where the model, under the run's own settings, reproduces that OOM (else its figures would
// be guesses) and only for PyTorch's OOMs on the device whatif replays.
#pragma once

#include <string>

#include "report_model.h"
#include "symbolizer.h"

namespace vt::analyzer {

// Fills OomReport::whatif and appends the sentence to each remedy that names a setting. A trace
// without such remedies is not read again.
void cite_whatif_in_remedies(const std::string& path, const SymbolizerOptions& symbols, TraceReport* rep);

}  // namespace vt::analyzer
