// `vramtrace fit`: from two or three short runs of the same script at different batch sizes, the
// peak at another batch size, and the largest batch that fits, before running it.
//
// Each run's PyTorch block requests are matched across the runs: a request is known by its call
// site (the user's Python line and the native frames under it, module and offset: the same op in
// every run) and by its order among that site's requests. A matched request's size is fitted as a
// line in the batch size (least squares); the script's request stream at batch B is then the
// largest run's stream, in its order (frees and torch.cuda.empty_cache() included), each request
// at its size for B, and that stream is replayed through the caching-allocator model (whatif.h) under the
// run's settings on its device: peak allocated and reserved at B, and whether it runs out of
// memory. A request seen in one run only keeps its size. With three runs, the first two predict
// the third: how far that prediction is from the third's recorded peaks is the margin the fit
// supports (with two, none can be given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alloc_conf.h"
#include "symbolizer.h"

namespace vt::analyzer {

struct FitOptions {
  std::vector<std::string> traces;
  std::vector<double> batches;  // one per trace
  double target = 0;            // 0: none
  bool max_batch = false;       // also search the largest batch that fits
  uint64_t device_memory = 0;   // 0: the recorded device's
  std::string alloc_conf;       // "" with conf_given false: the runs' own settings
  bool conf_given = false;
  SymbolizerOptions symbolizer;
};

struct FitPrediction {
  double batch = 0;
  uint64_t peak_allocated = 0, peak_reserved = 0;
  bool oom = false;             // the replay ran out of memory (peaks: up to there)
  std::string oom_where;        // the user's line of the request that failed
  uint64_t oom_size = 0;
};

struct FitReport {
  struct Run {
    std::string trace;
    double batch = 0;
    uint64_t peak_allocated = 0, peak_reserved = 0, requests = 0;
    bool oom = false;
  };
  std::vector<Run> runs;  // by batch size
  int device = 0;
  uint64_t device_total = 0, held_by_others = 0;
  std::string alloc_conf;
  uint64_t matched = 0, unmatched = 0;  // of the largest run's requests
  bool linear = true;                   // every matched request lies on its line (three runs)
  // Three runs: the first two predicting the third, against its recorded peaks.
  bool checked = false;
  FitPrediction check;
  double allocated_error = 0, reserved_error = 0;  // |predicted - recorded| / recorded
  bool has_target = false;
  FitPrediction target;
  bool has_max = false;
  double max_batch = 0;  // the largest that fits (0: not even the smallest run's)
  std::vector<std::string> limits;
};

// False with one line in *error: a trace unreadable or without PyTorch blocks, fewer than two
// runs, batch sizes not distinct and positive.
bool run_fit(const FitOptions& opt, FitReport* out, std::string* error);

// "8,16,32" (each trace's batch size, in order) -> {8, 16, 32}; false for anything else (an empty
// item, a trailing comma, a size not above 0). `fit --batch` and `check --predict-batch` read it.
bool parse_batch_sizes(const std::string& text, std::vector<double>* out);

std::string fit_text(const FitReport& r);
std::string fit_json(const FitReport& r);

}  // namespace vt::analyzer
