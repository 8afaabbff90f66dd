// Where libcupti is looked for, in order. A CUPTI only works with the runtime of its own CUDA
// major, and a process must not hold two copies (each would try to own the driver's profiling
// hooks), so the search prefers the copy already loaded, then the one shipped beside the
// process's libcudart (PyTorch and pip wheels ship their own), then the toolkit, then the
// default search path:
//
//   0. VRAMTRACE_CUPTI_LIBRARY, when set: that file and nothing else
//   1. a libcupti.so* (or auditwheel-renamed libcupti-<hash>.so*) already loaded (Kineto's)
//   2. beside each loaded libcudart.so.M: D/libcupti.so.M, D/libcupti.so,
//      D/../../cuda_cupti/lib/ (pip nvidia-cuda-runtime -> nvidia-cuda-cupti),
//      D/../extras/CUPTI/lib64/ and D/../../../extras/CUPTI/lib64/ (toolkit lib64, targets/<arch>/lib)
//   3. $CUDA_HOME, $CUDA_PATH, /usr/local/cuda: lib64/, extras/CUPTI/lib64/, lib/
//   4. dlopen("libcupti.so.M"), dlopen("libcupti.so")
//
// M is the major of the loaded libcudart, else the driver's, else the one we were built with.
// Pure: the inputs are passed in, so the order is unit-tested without any library present.
#pragma once

#include <cstddef>

namespace vt::cupti {

inline constexpr int kMaxCandidates = 40;
inline constexpr size_t kMaxPath = 1024;

struct SearchInputs {
  const char* cupti_library = nullptr;  // VRAMTRACE_CUPTI_LIBRARY
  const char* cuda_home = nullptr;      // CUDA_HOME
  const char* cuda_path = nullptr;      // CUDA_PATH
  const char* const* loaded = nullptr;  // paths of the loaded objects (dl_iterate_phdr)
  int n_loaded = 0;
  int driver_major = 0;                 // 0 when unknown
};

struct Candidates {
  char path[kMaxCandidates][kMaxPath];
  int n = 0;
  bool exclusive = false;  // from VRAMTRACE_CUPTI_LIBRARY: no fallback
  void add(const char* dir, const char* name);  // dir may be null (bare name for dlopen's search)
};

void cupti_candidates(const SearchInputs& in, Candidates* out);

// The CUDA major in a "libcudart.so.13[.x]" / "libcupti.so.13" file name, or 0.
int soname_major(const char* path);

// Paths of the loaded objects whose names start with libcupti or libcudart (dl_iterate_phdr),
// copied into storage[max][kMaxPath]. Returns how many.
int loaded_cuda_objects(char (*storage)[kMaxPath], int max);

}  // namespace vt::cupti
