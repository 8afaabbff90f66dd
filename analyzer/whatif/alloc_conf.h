// PYTORCH_CUDA_ALLOC_CONF as PyTorch 2.x reads it (c10's CUDAAllocatorConfig: lexArgs and
// parseArgs): the settings of the caching allocator that `vramtrace whatif` replays a run under.
// The syntax and the checks are PyTorch 2.6's, and so are its error texts: a setting PyTorch would
// refuse is refused here, with the reason, and one it accepts is accepted (tests/realtorch/whatif
// compares the two on a list of settings).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace vt::analyzer {

struct AllocConf {
  static constexpr size_t kNoLimit = SIZE_MAX;
  static constexpr size_t kIntervals = 16;  // roundup_power2_divisions: 1 MiB, 2 MiB, ... 32 GiB and above

  bool expandable_segments = false;
  size_t max_split_size = kNoLimit;             // max_split_size_mb (bytes): blocks this large are not split
  size_t max_non_split_rounding = 20ull << 20;  // max_non_split_rounding_mb (bytes; PyTorch >= 2.5)
  double garbage_collection_threshold = 0;      // (0, 1); acts only under a per-process memory fraction
  std::array<size_t, kIntervals> roundup_divisions{};  // per power-of-two interval from 1 MiB; 0 = off
  bool cuda_malloc_async = false;               // backend:cudaMallocAsync
  std::string text;                             // as given (the label outputs use; "" = PyTorch's defaults)

  // The divisions that apply to a request of `size` bytes (PyTorch's roundup_power2_divisions(size)).
  size_t divisions_for(size_t size) const;
  // Any option the native caching allocator reads (PyTorch warns they are ignored by cudaMallocAsync).
  bool native_options() const;
};

// Parses `text` (PYTORCH_CUDA_ALLOC_CONF's syntax: "key:value,key:[a:b,>:c]"); false with one
// sentence in *error when PyTorch would refuse it. Options that do not change device memory
// (release_lock_on_cudamalloc, pinned_*) are accepted and ignored, as they are by the model.
bool parse_alloc_conf(const std::string& text, AllocConf* out, std::string* error);

// The settings in the form they were given, or "PyTorch's defaults" for none.
std::string alloc_conf_label(const AllocConf& c);

}  // namespace vt::analyzer
