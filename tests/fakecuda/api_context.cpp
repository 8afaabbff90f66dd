// api_context.cpp — contexts: primary contexts (retain/release refcount, state, reset),
// created contexts, the calling thread's context stack, and context synchronisation
// (which applies memory pool release thresholds). Destroying a context frees every
// object it owns, as the real driver does.
#include "state.h"

using namespace fc;

namespace {

// Marks a context dead after freeing what it owned.
void kill_ctx(State &s, CUcontext ctx) {
  release_ctx_resources(s, ctx);
  s.ctxs[ctx].alive = false;
}

CUresult sync_ctx(State &s, CUcontext ctx) {
  if (!ctx) {
    if (CUresult r = current_ctx(s, &ctx)) return r;
  } else if (CUresult r = lookup_ctx(s, ctx)) {
    return r;
  }
  pool_sync_device(s, s.ctxs[ctx].device);
  return CUDA_SUCCESS;
}

}  // namespace

FC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  Device &d = s.devices[dev];
  d.primary_refs++;
  s.ctxs[d.primary].alive = true;
  *pctx = d.primary;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  Device &d = s.devices[dev];
  if (d.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--d.primary_refs == 0) kill_ctx(s, d.primary);  // the last release destroys it
  return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  const Device &d = s.devices[dev];
  *flags = d.primary_flags;
  *active = s.ctxs[d.primary].alive ? 1 : 0;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  Device &d = s.devices[dev];
  kill_ctx(s, d.primary);
  pool_trim_device(s, dev);  // a device reset also empties the pools
  d.primary_refs = 0;
  d.primary_flags = 0;
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                               unsigned int flags, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  CUcontext h = reinterpret_cast<CUcontext>(new_handle(s, 1));
  Ctx &c = s.ctxs[h];
  c.device = dev;
  c.alive = true;
  c.flags = flags;
  ctx_stack().push_back(h);  // a new context is made current to the calling thread
  *pctx = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = lookup_ctx(s, ctx)) return r;
  if (s.ctxs[ctx].primary) return CUDA_ERROR_INVALID_CONTEXT;  // use the primary-context API
  kill_ctx(s, ctx);
  std::vector<CUcontext> &stack = ctx_stack();
  if (!stack.empty() && stack.back() == ctx) stack.pop_back();
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  std::vector<CUcontext> &stack = ctx_stack();
  if (!ctx) {  // NULL unbinds: pops the top, if any
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (CUresult r = lookup_ctx(s, ctx)) return r;
  if (stack.empty()) stack.push_back(ctx);
  else stack.back() = ctx;
  return CUDA_SUCCESS;
}

// Lock-free like the real driver's (a thread-local read): tracers call it on every event.
FC_API CUresult cuCtxGetCurrent(CUcontext *pctx) {
  maybe_raise("cuCtxGetCurrent");
  State &s = state();
  if (CUresult r = require_init(s)) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUcontext> &stack = ctx_stack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxGetDevice(CUdevice *device) {
  maybe_raise("cuCtxGetDevice");
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  *device = s.ctxs[ctx].device;
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!ctx) {
    if (CUresult r = current_ctx(s, &ctx)) return r;
  } else if (CUresult r = lookup_ctx(s, ctx)) {
    return r;
  }
  *device = s.ctxs[ctx].device;
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult r = lookup_ctx(s, ctx)) return r;
  ctx_stack().push_back(ctx);
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  std::vector<CUcontext> &stack = ctx_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSynchronize(void) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return sync_ctx(s, nullptr);
}

FC_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return sync_ctx(s, ctx);
}
