// The recorder's side of cupti/interface/recorder_port.h: what the kernel recorder may use.
#include "recorder_port.h"

#include "driver_api.h"
#include "recorder_internal.h"

namespace vt::cupti::port {

bool write_record(uint8_t tag, const uint8_t* payload, size_t len, uint64_t t) {
  return write_meta(tag, payload, len, t);
}

uint64_t trace_start_ns() {
  const format::FileHeader* h = g_file.header();
  return h ? h->start_monotonic_ns : 0;
}

void* real_dlsym(void* handle, const char* name) { return vt::real_dlsym(handle, name); }

int driver_version() {
  int v = 0;
  if (driver_resolved() && g_api.driver_get_version && g_api.driver_get_version(&v) == CUDA_SUCCESS) return v;
  return 0;
}

}  // namespace vt::cupti::port
