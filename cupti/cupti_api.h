// The CUPTI entry points vramtrace calls, as function pointers resolved from a libcupti handle
// with the real dlsym. libcupti is never linked: it is loaded at run time (cupti/loader.cpp), and
// the names we also export as wrappers (cupti/wrapped_list.h) must never be called by name from
// inside libvramtrace, or we would mistake ourselves for another CUPTI client.
#pragma once

#include <cupti.h>

#include <cstdint>

namespace vt::cupti {

// NVTX's export-table getter (nvtxTypes.h), declared here to keep NVTX headers out.
typedef const void* (*NvtxGetExportTable)(uint32_t id);

struct CuptiApi {
  // Required.
  CUptiResult (*get_version)(uint32_t*);
  CUptiResult (*get_result_string)(CUptiResult, const char**);
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*get_timestamp)(uint64_t*);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*get_next_record)(uint8_t*, size_t, CUpti_Activity**);
  // Optional (absent from older or trimmed builds).
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*, CUpti_SubscriberParams*);
  CUptiResult (*get_dropped)(CUcontext, uint32_t, size_t*);
  CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t*, void*);
  CUptiResult (*get_attribute)(CUpti_ActivityAttribute, size_t*, void*);
  CUptiResult (*finalize)();
  int (*nvtx_init)(NvtxGetExportTable);  // InitializeInjectionNvtx2
  int (*nvtx_ext_init)(void*);           // InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t*)
};

// Fills *out from `handle`. Returns false with the first missing required name in *missing.
bool resolve_api(void* handle, CuptiApi* out, const char** missing);

// "CUPTI_ERROR_..." text for a result, via the library when it can say, else the number.
const char* result_text(const CuptiApi& api, CUptiResult r, char* buf, size_t cap);

}  // namespace vt::cupti
