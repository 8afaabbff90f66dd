// api_event.cpp — events: cuEventCreate, cuEventRecord(WithFlags) (with _ptsz), cuEventQuery,
// cuEventSynchronize, cuEventElapsedTime (v1, v2), cuEventDestroy (v1, v2). Nothing runs, so an
// event is complete as soon as it is recorded; synchronizing on it is, like a stream or context
// synchronize, where the pools of the device it was recorded on trim to their release threshold.
#include "state.h"

using namespace fc;

namespace {

constexpr unsigned kEventFlags = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

CUresult record(CUevent hEvent, CUstream hStream, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.events.find(hEvent);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  CUresult err = CUDA_SUCCESS;
  capture_of(s, hStream, ptsz, &err);  // (a record in a capture becomes part of the graph)
  if (err) return err;
  it->second.device = s.ctxs[ctx].device;
  return CUDA_SUCCESS;
}

CUresult destroy(CUevent hEvent) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!s.events.erase(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult elapsed(float *ms, CUevent start, CUevent end) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto a = s.events.find(start), b = s.events.find(end);
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (a == s.events.end() || b == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (a->second.device < 0 || b->second.device < 0) return CUDA_ERROR_INVALID_HANDLE;  // not recorded
  *ms = 0.0f;  // nothing takes time here
  return CUDA_SUCCESS;
}

}  // namespace

FC_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phEvent || (Flags & ~kEventFlags)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  CUevent h = new_handle_as<CUevent>(s, 16);
  s.events[h].ctx = ctx;
  *phEvent = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return record(hEvent, hStream, false); }
FC_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) { return record(hEvent, hStream, true); }
FC_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return record(hEvent, hStream, false);
}
FC_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return record(hEvent, hStream, true);
}

FC_API CUresult cuEventQuery(CUevent hEvent) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return s.events.count(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FC_API CUresult cuEventSynchronize(CUevent hEvent) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.events.find(hEvent);
  if (it == s.events.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (it->second.device >= 0) pool_sync_device(s, it->second.device);
  return CUDA_SUCCESS;
}

FC_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsed(pMilliseconds, hStart, hEnd);
}
FC_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsed(pMilliseconds, hStart, hEnd);
}
FC_API CUresult cuEventDestroy(CUevent hEvent) { return destroy(hEvent); }
FC_API CUresult cuEventDestroy_v2(CUevent hEvent) { return destroy(hEvent); }
