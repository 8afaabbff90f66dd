// Internal to cupti/: the hooks exports.cpp and nvtx_injection.cpp need from the session
// (cupti/cupti_session.cpp), which owns the state machine
//
//   idle --start()--> loading --CUPTI up--> active --another client--> aside
//                        |                    \--exit flush--> stopped
//                        \--> off (disabled, not found, refused, other tool, forked child)
#pragma once

#include "cupti_api.h"

namespace vt::cupti {

// Another CUPTI client called wrapped entry point `id` (wrapped_list.h); `target` is the real
// function the call is about to be forwarded to. If vramtrace holds CUPTI, it steps aside first
// (flush, disable its kinds, unsubscribe, a status record); before vramtrace started, it makes
// sure vramtrace never starts. Returns once the other client may proceed.
void on_foreign_call(int id, void* target);

// The libcupti handle vramtrace loaded, or nullptr.
void* cupti_handle();

// NVTX asked libvramtrace (NVTX_INJECTION64_PATH) to initialise: loads libcupti if needed and
// hands NVTX to CUPTI's InitializeInjectionNvtx2. 0 (NVTX stays a no-op) when kernels are off.
int nvtx_inject(NvtxGetExportTable get);

}  // namespace vt::cupti
