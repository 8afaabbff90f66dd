// api_context.cpp — contexts: primary contexts (retain/release refcount, state, reset),
// created contexts (cuCtxCreate v1-v4), green contexts (cuGreenCtxCreate/Destroy,
// cuCtxFromGreenCtx, with the SM resource queries they need), the calling thread's context
// stack, limits (cuCtxGet/SetLimit), and context synchronisation (which applies memory pool
// release thresholds). Destroying a context frees every object it owns, as the real driver does.
//
// A context costs its device memory while it exists (cuMemGetInfo shows it): FAKECUDA_CONTEXT_BYTES
// (default 512 MiB, "hundreds of MiB per context" on an H100/H200 — not measured in this
// simulator's own session) at the default limits. The limits that reserve device memory change
// that cost: CU_LIMIT_STACK_SIZE (local memory for every resident thread: 132 SMs x 2048
// threads x the stack size), CU_LIMIT_MALLOC_HEAP_SIZE and CU_LIMIT_PRINTF_FIFO_SIZE (their
// size), each rounded to 2 MiB pages. A primary context is created by its first retain.
#include "config.h"
#include "state.h"

#include <algorithm>

using namespace fc;

namespace {

constexpr Bytes kResidentThreads = 132ull * 2048;  // H200: SMs x max threads per SM

// What a context with these limits costs beyond FAKECUDA_CONTEXT_BYTES (may be negative).
int64_t limit_cost(const size_t *limits) {
  auto pages = [](Bytes b) { return static_cast<int64_t>(round_up(b, kPage)); };
  return pages(kResidentThreads * limits[CU_LIMIT_STACK_SIZE]) - pages(kResidentThreads * kDefaultStack) +
         pages(limits[CU_LIMIT_MALLOC_HEAP_SIZE]) - pages(kDefaultMallocHeap) +
         pages(limits[CU_LIMIT_PRINTF_FIFO_SIZE]) - pages(kDefaultPrintfFifo);
}

// Charges a context coming to life; OUT_OF_MEMORY (nothing changed) when the device is full.
CUresult charge_ctx(State &s, Ctx &c) {
  const Bytes cost = config().context_bytes;
  if (CUresult r = charge(s.devices[c.device], cost)) return r;
  c.charged = cost;
  static const Ctx defaults;
  std::copy(defaults.limits, defaults.limits + kLimits, c.limits);
  return CUDA_SUCCESS;
}

// Marks a context dead after freeing what it owned, and what it cost.
void kill_ctx(State &s, CUcontext ctx) {
  release_ctx_resources(s, ctx);
  Ctx &c = s.ctxs[ctx];
  if (c.alive) uncharge(s.devices[c.device], c.charged);
  c.charged = 0;
  c.alive = false;
}

CUresult new_ctx(State &s, int dev, unsigned flags, CUcontext *out) {
  CUcontext h = new_handle_as<CUcontext>(s, 1);
  Ctx c;
  c.device = dev;
  c.flags = flags;
  if (CUresult r = charge_ctx(s, c)) return r;
  c.alive = true;
  s.ctxs[h] = c;
  *out = h;
  return CUDA_SUCCESS;
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
  Ctx &c = s.ctxs[d.primary];
  if (!c.alive) {  // the first retain creates the context
    if (CUresult r = charge_ctx(s, c)) return r;
    c.alive = true;
  }
  d.primary_refs++;
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
  CUcontext h;
  if (CUresult r = new_ctx(s, dev, flags, &h)) return r;
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
  if (s.ctxs[ctx].green) return CUDA_ERROR_INVALID_CONTEXT;    // use cuGreenCtxDestroy
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
  if (CUresult r = check_unsafe_call(s)) return r;
  return sync_ctx(s, nullptr);
}

FC_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_unsafe_call(s)) return r;
  return sync_ctx(s, ctx);
}

FC_API CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pvalue || limit < 0 || limit >= kLimits) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  *pvalue = s.ctxs[ctx].limits[limit];
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (limit < 0 || limit >= kLimits || limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED)
    return CUDA_ERROR_INVALID_VALUE;  // (the CIG ones can only be queried)
  if ((limit == CU_LIMIT_STACK_SIZE || limit == CU_LIMIT_MALLOC_HEAP_SIZE || limit == CU_LIMIT_PRINTF_FIFO_SIZE) &&
      value > (1ull << 40))
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  Ctx &c = s.ctxs[ctx];
  size_t next[kLimits];
  std::copy(c.limits, c.limits + kLimits, next);
  next[limit] = value;
  const int64_t delta = limit_cost(next) - limit_cost(c.limits);
  Device &d = s.devices[c.device];
  if (delta > 0) {
    if (charge(d, static_cast<Bytes>(delta))) return CUDA_ERROR_OUT_OF_MEMORY;
    c.charged += static_cast<Bytes>(delta);
  } else {
    uncharge(d, static_cast<Bytes>(-delta));
    c.charged -= static_cast<Bytes>(-delta);
  }
  c.limits[limit] = value;
  return CUDA_SUCCESS;
}

// ---- green contexts ----

// The device's SMs as the one resource green contexts are made of.
FC_API CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource *result, CUdevResourceType type) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  if (!result || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  *result = CUdevResource{};
  result->type = CU_DEV_RESOURCE_TYPE_SM;
  result->sm.smCount = 132;
  result->sm.minSmPartitionSize = 8;
  result->sm.smCoscheduledAlignment = 8;
  return CUDA_SUCCESS;
}

// A descriptor is an opaque handle; the simulator only needs it to exist.
FC_API CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
                                          unsigned int nbResources) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phDesc || !resources || nbResources == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < nbResources; ++i)
    if (resources[i].type != CU_DEV_RESOURCE_TYPE_SM || resources[i].sm.smCount == 0) return CUDA_ERROR_INVALID_VALUE;
  *phDesc = new_handle_as<CUdevResourceDesc>(s, 9);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  if (!phCtx || !desc || (flags & ~unsigned(CU_GREEN_CTX_DEFAULT_STREAM))) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = new_ctx(s, dev, 0, &ctx)) return r;  // costs what a context costs
  CUgreenCtx g = new_handle_as<CUgreenCtx>(s, 10);
  s.ctxs[ctx].green = g;
  s.green_ctxs[g].ctx = ctx;
  *phCtx = g;  // not made current, unlike cuCtxCreate
  return CUDA_SUCCESS;
}

FC_API CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.green_ctxs.find(hCtx);
  if (it == s.green_ctxs.end()) return CUDA_ERROR_INVALID_VALUE;
  kill_ctx(s, it->second.ctx);
  s.green_ctxs.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.green_ctxs.find(hCtx);
  if (!pContext || it == s.green_ctxs.end()) return CUDA_ERROR_INVALID_VALUE;
  *pContext = it->second.ctx;
  return CUDA_SUCCESS;
}
