// api_stream.cpp — streams: cuStreamCreate(WithPriority), cuStreamDestroy_v2, cuStreamQuery,
// cuStreamWaitEvent and cuStreamSynchronize (with their _ptsz exports); streams and events go
// with their context. Nothing executes, so
// a stream is a context binding plus its capture state (api_capture.cpp); a synchronize is
// where memory pools give memory above their release threshold back. The calling thread's
// per-thread default stream (CU_STREAM_PER_THREAD, or 0 through a _ptsz export) has a record
// of its own so that it can capture.
#include "state.h"

using namespace fc;

namespace {

bool is_builtin(CUstream h) { return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD; }

CUresult synchronize(CUstream hStream, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  if (Stream *st = stream_record(s, hStream, ptsz); st && st->capture.active) {
    st->capture.invalidated = true;  // a capturing stream cannot be waited for
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  CUresult err = CUDA_SUCCESS;
  capture_of(s, hStream, ptsz, &err);  // the legacy stream while a blocking stream captures
  if (err) return err;
  pool_sync_device(s, s.ctxs[ctx].device);
  return CUDA_SUCCESS;
}

CUresult create(CUstream *phStream, unsigned flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phStream || (flags & ~unsigned(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  CUstream h = new_handle_as<CUstream>(s, 3);
  Stream &st = s.streams[h];
  st.ctx = ctx;
  st.flags = flags;
  *phStream = h;
  return CUDA_SUCCESS;
}

CUresult query(CUstream hStream, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  if (Stream *st = stream_record(s, hStream, ptsz); st && st->capture.active)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;  // nothing is ever pending
}

CUresult wait_event(CUstream hStream, CUevent hEvent, unsigned flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  if (!s.events.count(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fc {

CUresult stream_ctx(State &s, CUstream stream, CUcontext *ctx) {
  if (is_builtin(stream)) return current_ctx(s, ctx);  // the current context's default stream
  auto it = s.streams.find(stream);
  if (it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = lookup_ctx(s, it->second.ctx)) return r;
  *ctx = it->second.ctx;
  return CUDA_SUCCESS;
}

Stream *stream_record(State &s, CUstream stream, bool ptsz) {
  if (stream == CU_STREAM_PER_THREAD || (!stream && ptsz)) {
    Stream &st = s.thread_streams[thread_id()];
    current_ctx(s, &st.ctx);
    return &st;
  }
  if (is_builtin(stream)) return nullptr;  // the legacy stream
  auto it = s.streams.find(stream);
  return it == s.streams.end() ? nullptr : &it->second;
}

void stream_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.streams.begin(); it != s.streams.end();)
    it = it->second.ctx == ctx ? s.streams.erase(it) : std::next(it);
  for (auto it = s.events.begin(); it != s.events.end();)
    it = it->second.ctx == ctx ? s.events.erase(it) : std::next(it);
}

}  // namespace fc

FC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) { return create(phStream, Flags); }

FC_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
  return create(phStream, flags);  // priorities are not simulated
}

FC_API CUresult cuStreamDestroy_v2(CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.streams.find(hStream);
  if (is_builtin(hStream) || it == s.streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  Capture &c = it->second.capture;
  if (c.active && !c.user_graph) graph_destroy(s, c.graph);  // an unfinished capture dies with it
  s.streams.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuStreamSynchronize(CUstream hStream) { return synchronize(hStream, false); }
FC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return synchronize(hStream, true); }
FC_API CUresult cuStreamQuery(CUstream hStream) { return query(hStream, false); }
FC_API CUresult cuStreamQuery_ptsz(CUstream hStream) { return query(hStream, true); }
FC_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}
FC_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return wait_event(hStream, hEvent, Flags);
}
