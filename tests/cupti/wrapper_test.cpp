// The exported CUPTI wrappers (cupti/exports.cpp): dlsym(handle) lookups of the watched names
// (JAX/XLA, TensorFlow) are swapped for ours, everything else is left alone.
#include <catch2/catch.hpp>

#include <cupti.h>

#include "activity_recorder.h"

using vt::cupti::swap_dlsym;

TEST_CASE("dlsym(handle) lookups of the watched CUPTI names are swapped for our wrappers") {
  int dummy = 0;
  void* real = &dummy;
  CHECK(swap_dlsym("cuptiSubscribe", real) == reinterpret_cast<void*>(&cuptiSubscribe));
  CHECK(swap_dlsym("cuptiActivityRegisterCallbacks", real) == reinterpret_cast<void*>(&cuptiActivityRegisterCallbacks));
  CHECK(swap_dlsym("cuptiActivityFlushAll", real) == real);  // not watched
  CHECK(swap_dlsym("cuMemAlloc_v2", real) == real);
  CHECK(swap_dlsym("cuptiSubscribe", nullptr) == nullptr);  // not found stays not found
  // Our own wrapper handed back stays itself.
  void* mine = reinterpret_cast<void*>(&cuptiSubscribe);
  CHECK(swap_dlsym("cuptiSubscribe", mine) == mine);
}
