// `vramtrace whatif`: a recorded run's PyTorch block requests and frees, replayed through the
// caching-allocator model (allocator_model.h) under other settings, beside what was recorded.
//
// Two passes over the trace. The first finds the device (the one with PyTorch's out-of-memory
// error, else the one whose reserved memory peaked highest), the recorded figures and OOMs, the
// settings the run had (PYTORCH_CUDA_ALLOC_CONF, from the trace), and what on the device was not
// PyTorch's cache that the trace cannot see moment by moment (the contexts and modules as the
// report measures them; at an OOM, whatever cudaMemGetInfo's free leaves unexplained: other
// processes). The second replays, every setting at once: each block request (its recorded size:
// the size the program asked for where the trace has it, else the block as PyTorch rounded it), each free, each torch.cuda.empty_cache() (PyTorch's segments
// released with no failed allocation before them), each recorded OOM (the request tried: whether
// it would fail; if not, the block is freed again, since the program went on as if it had
// failed), with the memory outside PyTorch held as recorded at that moment. A setting under which
// a request that succeeded would fail stops there: the run would have ended with an OOM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alloc_conf.h"
#include "allocator_model.h"
#include "symbolizer.h"
#include "trace_reader.h"

namespace vt::analyzer {

struct WhatifOptions {
  std::vector<AllocConf> settings;  // tried in this order
  int device = -1;                  // -1: chosen as above
  uint64_t device_memory = 0;       // 0: the recorded device's
  double memory_fraction = 0;       // torch.cuda.set_per_process_memory_fraction in the replay (0: none)
  SymbolizerOptions symbolizer;
};

// An out-of-memory error, recorded or met in the replay.
struct WhatifOom {
  uint64_t t_ns = 0;
  uint64_t size = 0;   // the request (rounded)
  std::string where;   // the user's line (user_frames.h), "" when the stack is unknown
  bool would_happen = true;
  bool not_reached = false;  // the setting's replay had already ended at an earlier OOM
};

struct WhatifResult {
  AllocConf conf;
  AllocatorModel::Stats stats;
  std::vector<WhatifOom> ooms;  // one per recorded OOM, in order
  bool new_oom = false;         // a request that succeeded in the run fails: the replay stopped there
  WhatifOom first_new_oom;
  uint64_t blocks = 0;          // requests replayed
};

struct WhatifRecorded {
  int device = 0;
  uint64_t device_total = 0;
  std::string alloc_conf;       // as the process had it ("" = unset)
  bool conf_understood = true;  // parsed; else the baseline replay used PyTorch's defaults
  std::string conf_problem;
  uint64_t peak_allocated = 0, peak_reserved = 0;
  uint64_t blocks = 0, frees = 0, empty_caches = 0;
  uint64_t requests_known = 0;  // blocks whose request the trace has (torch alloc records)
  uint64_t outside_peak = 0;    // the most device memory outside PyTorch's cache (this process)
  uint64_t fixed_others = 0;    // contexts, modules, other processes (held all along in the replay)
  std::vector<WhatifOom> ooms;
  uint64_t unmatched_frees = 0; // frees of blocks allocated before the trace began
};

struct WhatifReport {
  std::string trace;
  WhatifRecorded recorded;
  WhatifResult baseline;                // the model under the recorded settings: how close it comes
  std::vector<WhatifResult> results;    // one per WhatifOptions::settings
  std::vector<std::string> limits;      // what the replay cannot know, said in the output
  std::vector<std::string> problems;  // damage the reader met (named on stderr)
};

// False with one line in *error: an unreadable trace, or one without PyTorch's block records.
bool run_whatif(const std::string& trace, const WhatifOptions& opt, WhatifReport* out, std::string* error);

// The usual remedies `--sweep` tries (PYTORCH_CUDA_ALLOC_CONF strings, all valid).
std::vector<std::string> whatif_sweep_settings();

}  // namespace vt::analyzer
