// Internal to cupti/: the hooks exports.cpp and nvtx_injection.cpp need from the session
// (cupti/cupti_session.cpp), which owns the state machine
//
//   idle --start()--> loading --CUPTI up--> active --another client--> aside
//                        |                  ^  \--exit flush--> stopped     |
//                        |                  \---- the client lets go -------/
//                        \--> off (disabled, not found, refused, other tool, forked child)
#pragma once

#include "cupti_api.h"

namespace vt::cupti {

// Another CUPTI client called wrapped entry point `id` (wrapped_list.h); `target` is the real
// function the call is about to be forwarded to. If vramtrace holds CUPTI, it steps aside first
// (flush, disable its kinds, unsubscribe, a status record); before vramtrace started, it makes
// sure vramtrace never starts. Returns once the other client may proceed.
void on_foreign_call(int id, void* target);

// The wrapped call `id` returned `result`. A client's cuptiUnsubscribe or cuptiFinalize that
// succeeded while vramtrace stood aside: vramtrace takes CUPTI back on a thread of its own
// (re-subscribes, re-enables its kinds, a kCuptiResumed status record marks the gap).
void after_foreign_call(int id, CUptiResult result);

// A client registers buffer callbacks: remembers them and replaces them with trampolines that
// pass the client's buffers through and keep vramtrace's own (lent before the handover, completed
// after it) away from the client: those are returned to the pool and counted, never decoded.
void their_buffer_callbacks(CUpti_BuffersCallbackRequestFunc* rq, CUpti_BuffersCallbackCompleteFunc* cm);

// The libcupti handle vramtrace loaded, or nullptr.
void* cupti_handle();

// NVTX asked libvramtrace (NVTX_INJECTION64_PATH) to initialise: loads libcupti if needed and
// hands NVTX to CUPTI's InitializeInjectionNvtx2. 0 (NVTX stays a no-op) when kernels are off.
int nvtx_inject(NvtxGetExportTable get);
// The same for an NVTX extension module (payloads, counters, ...): forwarded to the libcupti's
// InitializeInjectionNvtxExtension when it has one, else 0 (the extension stays a no-op).
int nvtx_ext_inject(void* module_info);

}  // namespace vt::cupti
