// See cupti_api.h.
#include "cupti_api.h"

#include <cstdio>

#include "recorder_port.h"  // port::real_dlsym: plain dlsym would reach our exported stub

namespace vt::cupti {

namespace {
template <typename F>
bool get(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(port::real_dlsym(h, name));
  return *out != nullptr;
}
}  // namespace

bool resolve_api(void* h, CuptiApi* a, const char** missing) {
  *a = CuptiApi{};
  struct Req {
    const char* name;
    bool ok;
  } req[] = {
      {"cuptiGetVersion", get(h, "cuptiGetVersion", &a->get_version)},
      {"cuptiGetResultString", get(h, "cuptiGetResultString", &a->get_result_string)},
      {"cuptiSubscribe", get(h, "cuptiSubscribe", &a->subscribe)},
      {"cuptiUnsubscribe", get(h, "cuptiUnsubscribe", &a->unsubscribe)},
      {"cuptiGetTimestamp", get(h, "cuptiGetTimestamp", &a->get_timestamp)},
      {"cuptiActivityRegisterCallbacks", get(h, "cuptiActivityRegisterCallbacks", &a->register_callbacks)},
      {"cuptiActivityEnable", get(h, "cuptiActivityEnable", &a->enable)},
      {"cuptiActivityDisable", get(h, "cuptiActivityDisable", &a->disable)},
      {"cuptiActivityFlushAll", get(h, "cuptiActivityFlushAll", &a->flush_all)},
      {"cuptiActivityGetNextRecord", get(h, "cuptiActivityGetNextRecord", &a->get_next_record)},
  };
  get(h, "cuptiSubscribe_v2", &a->subscribe_v2);
  get(h, "cuptiActivityGetNumDroppedRecords", &a->get_dropped);
  get(h, "cuptiActivitySetAttribute", &a->set_attribute);
  get(h, "cuptiActivityGetAttribute", &a->get_attribute);
  get(h, "cuptiFinalize", &a->finalize);
  get(h, "InitializeInjectionNvtx2", &a->nvtx_init);
  get(h, "InitializeInjectionNvtxExtension", &a->nvtx_ext_init);
  for (const Req& r : req)
    if (!r.ok) {
      *missing = r.name;
      return false;
    }
  return true;
}

const char* result_text(const CuptiApi& api, CUptiResult r, char* buf, size_t cap) {
  const char* s = nullptr;
  if (api.get_result_string && api.get_result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  snprintf(buf, cap, "CUPTI error %d", int(r));
  return buf;
}

}  // namespace vt::cupti
