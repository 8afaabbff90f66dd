// Loading libcupti at run time, from a helper thread (never inside a driver hook: dlopen takes
// the loader lock, and a hook may run under an allocator lock that a thread holding the loader
// lock waits for). Tries the candidates of library_search.h in order; the first that dlopen
// accepts wins. The caller serialises calls (cupti/cupti_session.cpp holds its lock).
#pragma once

#include "library_search.h"

namespace vt::cupti {

struct LoadedCupti {
  void* handle = nullptr;
  char path[kMaxPath] = {};  // the file actually loaded (from the link map)
  bool exclusive = false;    // VRAMTRACE_CUPTI_LIBRARY was set
  bool simulated_driver = false;  // not loaded: the driver is tests/fakecuda's (see load_cupti)
};

// Returns false when no candidate loads; `out->path` then names the last one tried. With the
// simulated driver (tests/fakecuda) only a libcupti named by VRAMTRACE_CUPTI_LIBRARY (the test
// suite's stand-in) is loaded: a real libcupti's start-up crashes against it.
bool load_cupti(LoadedCupti* out);

}  // namespace vt::cupti
