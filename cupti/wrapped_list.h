// The one list of CUPTI entry points libvramtrace exports as wrappers, to notice another CUPTI
// client (Kineto inside torch.profiler, JAX's profiler, a tool linked into the program) the
// moment it starts: each is how a client begins a session. libvramtrace is LD_PRELOADed, so a
// library that links libcupti (DT_NEEDED) binds these names to us; dlsym(handle, name) lookups
// are swapped by name in interpose/entry/dlsym_hook.cpp (vt::cupti::swap_dlsym). A wrapper first makes
// vramtrace step aside (cupti/cupti_session.cpp), then forwards to the real function, found with
// RTLD_NEXT, else in the libcupti we loaded, else in any loaded libcupti.
//
// libcupti itself is linked -Bsymbolic (DT_SYMBOLIC), so its internal calls never reach these,
// and vramtrace calls CUPTI only through pointers (cupti_api.h): any call here is someone else.
// The version script exports them through the existing `cu*` pattern.
//
// cuptiUnsubscribe (and cuptiFinalize, once it returns) is how a client lets go: vramtrace, if it
// stepped aside, takes CUPTI back (cupti_session.cpp, resume).
//
// X(name, parameter list, argument list)
#pragma once

#define VT_CUPTI_WRAPPED(X)                                                                          \
  X(cuptiSubscribe, (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void* ud), (s, cb, ud))      \
  X(cuptiSubscribe_v2, (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void* ud, CUpti_SubscriberParams* p), \
    (s, cb, ud, p))                                                                                  \
  X(cuptiActivityRegisterCallbacks, (CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cm), \
    (rq, cm))                                                                                        \
  X(cuptiActivityRegisterTimestampCallback, (CUpti_TimestampCallbackFunc f), (f))                   \
  X(cuptiActivityEnable, (CUpti_ActivityKind k), (k))                                                \
  X(cuptiActivityEnableContext, (CUcontext c, CUpti_ActivityKind k), (c, k))                         \
  X(cuptiFinalize, (), ())                                                                           \
  X(cuptiUnsubscribe, (CUpti_SubscriberHandle s), (s))

namespace vt::cupti {

enum WrappedId : int {
#define VT_CUPTI_ID(name, params, args) k_##name,
  VT_CUPTI_WRAPPED(VT_CUPTI_ID)
#undef VT_CUPTI_ID
      kWrappedCount
};

inline const char* wrapped_name(int id) {
  static const char* const kNames[] = {
#define VT_CUPTI_NAME(name, params, args) #name,
      VT_CUPTI_WRAPPED(VT_CUPTI_NAME)
#undef VT_CUPTI_NAME
  };
  return id >= 0 && id < kWrappedCount ? kNames[id] : "?";
}

}  // namespace vt::cupti
