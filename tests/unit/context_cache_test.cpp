// The recorder's per-thread context -> device cache (interpose/entry/driver_api.h): the context is asked
// for on every acquire, its device only when the context changed or a context was torn down
// anywhere (a new context may come back at a destroyed one's address, on another device).
#include <catch2/catch.hpp>

#include "driver_api.h"

namespace {

CUcontext g_current = nullptr;
int g_device = 0;
int g_device_asks = 0;

CUresult stub_get_current(CUcontext* c) {
  *c = g_current;
  return CUDA_SUCCESS;
}
CUresult stub_get_device(CUdevice* d) {
  ++g_device_asks;
  *d = g_device;
  return CUDA_SUCCESS;
}

}  // namespace

TEST_CASE("the context's device is asked again after any context teardown, and only then for the same context") {
  vt::DriverApi saved = vt::g_api;
  vt::g_api.ctx_get_current = stub_get_current;
  vt::g_api.ctx_get_device = stub_get_device;
  uint64_t ctx = 0;
  int32_t device = -1;

  g_current = reinterpret_cast<CUcontext>(0x5000);
  g_device = 0;
  vt::current_context(&ctx, &device);
  CHECK(ctx == 0x5000);
  CHECK(device == 0);
  const int asks = g_device_asks;
  vt::current_context(&ctx, &device);  // the same context: its device comes from the cache
  CHECK(device == 0);
  CHECK(g_device_asks == asks);

  // Destroyed, and a new context on device 1 comes back at the same address.
  vt::contexts_torn_down();
  g_device = 1;
  vt::current_context(&ctx, &device);
  CHECK(ctx == 0x5000);
  CHECK(device == 1);
  CHECK(g_device_asks == asks + 1);

  g_current = nullptr;  // no context current: unknown
  vt::current_context(&ctx, &device);
  CHECK(ctx == 0);
  CHECK(device == -1);
  vt::g_api = saved;
}
