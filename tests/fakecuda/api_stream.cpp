// api_stream.cpp — streams: cuStreamCreate, cuStreamDestroy_v2, cuStreamSynchronize (and
// its _ptsz export). Nothing executes, so a stream is only a context binding; a
// synchronize is where memory pools give memory above their release threshold back.
#include "state.h"

using namespace fc;

namespace {

bool is_builtin(CUstream h) { return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD; }

CUresult synchronize(CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  pool_sync_device(s, s.ctxs[ctx].device);
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

void stream_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.streams.begin(); it != s.streams.end();)
    it = it->second.ctx == ctx ? s.streams.erase(it) : std::next(it);
}

}  // namespace fc

FC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phStream || (Flags & ~unsigned(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  CUstream h = reinterpret_cast<CUstream>(new_handle(s, 3));
  s.streams[h].ctx = ctx;
  *phStream = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuStreamDestroy_v2(CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (is_builtin(hStream) || !s.streams.erase(hStream)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

FC_API CUresult cuStreamSynchronize(CUstream hStream) { return synchronize(hStream); }
FC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return synchronize(hStream); }
