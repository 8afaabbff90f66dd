// The exported driver entry points. Every hooked function, whichever way the program reached it
// (-lcuda, dlsym(handle), cuGetProcAddress), lands in one generic body: forward to the real
// function, and record one event. Per-function meaning lives in describe.h; the list of functions
// in format/op_table.h. Also the substitution of a real driver pointer by our hook (substitute(),
// for cuGetProcAddress and dlsym(handle)). Only libvramtrace.so has these: the recorder's
// objects, which the unit tests link, export nothing.
//
// What the program sees is the driver's own behaviour: its result, and its errno (errno is put
// back before the real call and taken after it, so our work on either side never shows).
// A hook that interrupts our own work on this thread (a signal handler) queues its event
// instead of recording it (reentry_guard.h).
#include <cerrno>
#include <utility>

#include "clock.h"
#include "cuda_decls.h"
#include "describe.h"
#include "driver_api.h"
#include "gpu_processes.h"
#include "lookup_gaps.h"
#include "lookup_log.h"
#include "pool_usage.h"
#include "recorder.h"
#include "reentry_guard.h"

namespace vt {

namespace {

// Our exported wrappers, by HookId (defined below under the exact driver names; cuda_decls.h
// declares them).
void* const kHooks[kHookCount] = {
#define VT_HOOK_ADDR(code, name, action, kind, params, args, fields) reinterpret_cast<void*>(&::name),
    VT_FOR_EACH_HOOK(VT_HOOK_ADDR)
#undef VT_HOOK_ADDR
};

}  // namespace

void* substitute(void* p) {
  if (!p) return p;
  for (int i = 0; i < kHookCount; ++i)
    if (g_real[i].load(std::memory_order_relaxed) == p) return kHooks[i];
  return p;
}

namespace {

template <HookId Id, typename... A>
CUresult call_real(A... args) {
  void* fn = g_real[int(Id)].load(std::memory_order_relaxed);
  if (!fn) {
    if (!driver_resolved()) return CUDA_ERROR_NOT_INITIALIZED;  // no libcuda in this process
    fn = g_real[int(Id)].load(std::memory_order_relaxed);
    if (!fn) return CUDA_ERROR_NOT_FOUND;  // this driver does not export it
  }
  return reinterpret_cast<CUresult (*)(A...)>(fn)(args...);
}

// cuGetProcAddress*: the real lookup decides (version, flags, _ptsz, status); then a hooked
// function's pointer is swapped for ours. This covers cudart's self-lookup of
// "cuGetProcAddress", after which every lookup it makes comes back here.
template <HookId Id, typename... A>
CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, A... rest) {
  CUresult r = call_real<Id>(symbol, pfn, version, flags, rest...);
  int* err = &errno;
  int after = *err;
  if (r == CUDA_SUCCESS && pfn && *pfn) {
    void* real = *pfn;
    *pfn = substitute(real);
    note_lookup(symbol, *pfn != real, version, flags);  // a memory entry point handed out unhooked is recorded
  }
  log_lookup(symbol, version, flags, r, pfn ? *pfn : nullptr);
  *err = after;
  return r;
}

// The driver call and its event. *errno_after gets errno as the real function left it.
template <HookId Id, typename... A>
__attribute__((always_inline)) inline CUresult traced_call(void* caller, int* err, int before, int* errno_after,
                                                           A... args) {
  constexpr OpInfo op = kOps[int(Id)];
  HookScope scope;  // its end may record queued events: errno is put back by the caller after it
  // Acquires and capture begins/ends may open the trace; releases only matter once it is open,
  // or may be by the time a queue they join is recorded (a handler interrupting our work before
  // the trace opened: its queued acquire opens it, its release must follow).
  bool wanted = op.action == Action::Acquire || op.action == Action::Control ? tracing_possible()
                : op.action != Action::Query && (recording() || (tracing_possible() && scope.nested_in_our_work()));
  if (!wanted) {
    *err = before;
    scope.real_call_begin();
    CUresult r = call_real<Id>(args...);
    scope.real_call_end();
    *errno_after = *err;
    observe(Op<Id>{}, r, args...);
    follow_any_call<Id>(r, scope.nested_in_our_work());
    return r;
  }

  Event e;
  e.set_op(recorded_as(Id));  // (itself, or the op of the same meaning it is written as)
  e.caller_ip = reinterpret_cast<uint64_t>(caller);
  // A free names its memory by address, and the memory's device is its allocation's: the
  // context query (half the cost of a warm stream-ordered pair's hook) is for acquires only.
  if constexpr (op.action == Action::Release && keyed_by_address(op.kind))
    e.device = kDeviceNotRead;
  else
    current_context(&e.context, &e.device);
  prepare(Op<Id>{}, e, args...);
  if (op.action == Action::Release) e.t_ns = now_ns();
  *err = before;
  scope.real_call_begin();
  CUresult r = call_real<Id>(args...);
  scope.real_call_end();
  *errno_after = *err;
  observe(Op<Id>{}, r, args...);
  follow_any_call<Id>(r, scope.nested_in_our_work());
  follow_recorded_call<Id>(r);
  if (op.action == Action::Acquire || op.action == Action::Control) e.t_ns = now_ns();  // (Control: an instant)
  e.result = int32_t(r);
  describe(Op<Id>{}, e, r, args...);
  if (e.drop) return r;
  if (r != CUDA_SUCCESS && op.action == Action::Acquire && g_api.mem_get_info) {
    size_t free_b = 0, total_b = 0;
    if (g_api.mem_get_info(&free_b, &total_b) == CUDA_SUCCESS) {
      e.free_bytes = free_b;
      e.total_bytes = total_b;
    }
  }
  if (__builtin_expect(scope.nested_in_our_work(), 0)) {
    defer_event(copy_of(e));
  } else {
    record_op<Id>(e);
    if constexpr (makes_context(Id))  // the device's other processes, for its cost (rule 14)
      if (r == CUDA_SUCCESS && (e.fields & format::kEvAux2)) watch_gpu_processes(int(int32_t(e.aux2)));
    if (r == CUDA_ERROR_OUT_OF_MEMORY && op.action == Action::Acquire && recording()) {
      record_gpu_processes(e.device, e.t_ns);
      record_pool_usage(copy_of(e));
    }
  }
  return r;
}

template <HookId Id, typename... A>
__attribute__((always_inline)) inline CUresult invoke(void* caller, A... args) {
  constexpr OpInfo op = kOps[int(Id)];
  if constexpr (op.action == Action::Lookup) {
    return lookup<Id>(args...);
  } else {
    int* err = &errno;
    int before = *err;
    if (!driver_resolved()) {
      *err = before;
      return CUDA_ERROR_NOT_INITIALIZED;  // no libcuda in this process
    }
    int after;
    CUresult r = traced_call<Id>(caller, err, before, &after, args...);
    *err = after;
    return r;
  }
}

}  // namespace
}  // namespace vt

#define VT_EXPORT __attribute__((visibility("default")))
#define VT_DEFINE_HOOK(code, name, action, kind, params, args, fields) \
  extern "C" VT_EXPORT __attribute__((noinline)) CUresult name params {                        \
    return vt::invoke<vt::HookId::name>(__builtin_return_address(0) VT_MORE_ARGS args);         \
  }
#define VT_MORE_ARGS(...) __VA_OPT__(, ) __VA_ARGS__  // (cuCtxSynchronize has none)
VT_FOR_EACH_HOOK(VT_DEFINE_HOOK)
#undef VT_DEFINE_HOOK
