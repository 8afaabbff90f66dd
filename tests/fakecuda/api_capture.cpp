// api_capture.cpp — stream capture: cuStreamBeginCapture (v1, _v2, ToGraph), cuStreamEndCapture,
// cuStreamIsCapturing, cuStreamGetCaptureInfo (v1, _v2, _v3), all with their _ptsz exports,
// and cuThreadExchangeStreamCaptureMode. While a stream captures, stream-ordered allocations
// on it become graph nodes (api_pool.cpp); captured work forms a chain (each captured node
// depends on the one before). The CUDA 13 rules kept here:
//  - the legacy stream cannot capture; using it while a blocking stream of its context
//    captures fails with STREAM_CAPTURE_IMPLICIT and invalidates that capture;
//  - synchronizing a capturing stream fails with STREAM_CAPTURE_UNSUPPORTED and invalidates it;
//  - "potentially unsafe" calls (cuMemAlloc, cuMemAllocPitch, cuMemFree, cuCtxSynchronize) fail
//    with STREAM_CAPTURE_UNSUPPORTED, invalidating the capture, when the calling thread's
//    interaction mode forbids them (cuThreadExchangeStreamCaptureMode's documentation);
//  - an invalidated capture makes every later operation on the stream fail with
//    STREAM_CAPTURE_INVALIDATED, and cuStreamEndCapture returns a NULL graph with that error.
#include "state.h"

using namespace fc;

namespace {

thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

template <typename F>
void for_each_capture(State &s, F &&f) {
  for (auto &[h, st] : s.streams)
    if (st.capture.active) f(st, st.capture);
  for (auto &[t, st] : s.thread_streams)
    if (st.capture.active) f(st, st.capture);
}

CUresult begin(CUstream hStream, CUstreamCaptureMode mode, bool ptsz, CUgraph user, const CUgraphNode *deps,
               size_t ndeps) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  Stream *st = stream_record(s, hStream, ptsz);
  if (!st) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // "may not be initiated on CU_STREAM_LEGACY"
  if (st->capture.active) return CUDA_ERROR_ILLEGAL_STATE;
  if (user && !s.graphs.count(user)) return CUDA_ERROR_INVALID_VALUE;
  if (ndeps && !deps) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < ndeps; ++i) {
    auto n = s.nodes.find(deps[i]);
    if (n == s.nodes.end() || n->second.graph != user) return CUDA_ERROR_INVALID_VALUE;
  }
  Capture &c = st->capture;
  c = Capture{};
  c.active = true;
  c.mode = mode;
  c.user_graph = user != nullptr;
  c.graph = user ? user : graph_create(s);
  s.graphs[c.graph].capturing = true;
  c.id = s.next_capture_id++;
  c.thread = thread_id();
  c.deps.assign(deps, deps + ndeps);
  return CUDA_SUCCESS;
}

CUresult end(CUstream hStream, CUgraph *phGraph, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phGraph) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  Stream *st = stream_record(s, hStream, ptsz);
  if (!st || !st->capture.active) return CUDA_ERROR_ILLEGAL_STATE;
  Capture &c = st->capture;
  if (c.mode != CU_STREAM_CAPTURE_MODE_RELAXED && c.thread != thread_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  const bool invalidated = c.invalidated;
  s.graphs[c.graph].capturing = false;
  if (invalidated) {
    if (!c.user_graph) graph_destroy(s, c.graph);
    *phGraph = nullptr;
  } else {
    *phGraph = c.graph;
  }
  c = Capture{};
  return invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

CUstreamCaptureStatus status_of(const Stream *st) {
  if (!st || !st->capture.active) return CU_STREAM_CAPTURE_STATUS_NONE;
  return st->capture.invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

CUresult info(CUstream hStream, bool ptsz, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
              const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  Stream *st = stream_record(s, hStream, ptsz);
  if (!st) {  // the legacy stream: unusable while a blocking stream captures (not invalidated)
    for (auto &[h, other] : s.streams)
      if (other.capture.active && other.ctx == ctx && !(other.flags & CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  *status = status_of(st);
  const bool active = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id && *status != CU_STREAM_CAPTURE_STATUS_NONE) *id = st->capture.id;
  if (graph) *graph = active ? st->capture.graph : nullptr;
  // The dependency array stays valid until the next operation on the stream, as documented.
  if (deps) *deps = active && !st->capture.deps.empty() ? st->capture.deps.data() : nullptr;
  if (edges) *edges = nullptr;  // all edges are default edges
  if (ndeps) *ndeps = active ? st->capture.deps.size() : 0;
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *status, bool ptsz) {
  return info(hStream, ptsz, status, nullptr, nullptr, nullptr, nullptr, nullptr);
}

}  // namespace

namespace fc {

Capture *capture_of(State &s, CUstream stream, bool ptsz, CUresult *err) {
  Stream *st = stream_record(s, stream, ptsz);
  if (!st) {
    // The legacy stream waits for every blocking stream of its context.
    CUcontext ctx = nullptr;
    current_ctx(s, &ctx);
    for (auto &[h, other] : s.streams) {
      Capture &c = other.capture;
      if (c.active && other.ctx == ctx && !(other.flags & CU_STREAM_NON_BLOCKING)) {
        c.invalidated = true;
        *err = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
    }
    return nullptr;
  }
  if (!st->capture.active) return nullptr;
  if (st->capture.invalidated) {
    *err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return nullptr;
  }
  return &st->capture;
}

CUresult check_unsafe_call(State &s) {
  if (t_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const uint64_t me = thread_id();
  CUresult r = CUDA_SUCCESS;
  for_each_capture(s, [&](Stream &, Capture &c) {
    const bool own = c.thread == me && c.mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool others = t_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c.thread != me &&
                        c.mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || others) {
      c.invalidated = true;
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  });
  return r;
}

void capture_add(State &s, Capture &c, CUgraphNode node) { c.deps.assign(1, node); }

}  // namespace fc

FC_API CUresult cuStreamBeginCapture(CUstream hStream) {
  return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false, nullptr, nullptr, 0);
}
FC_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true, nullptr, nullptr, 0);
}
FC_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return begin(hStream, mode, false, nullptr, nullptr, 0);
}
FC_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return begin(hStream, mode, true, nullptr, nullptr, 0);
}
FC_API CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                            const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                            CUstreamCaptureMode mode) {
  if (!hGraph) return CUDA_ERROR_INVALID_VALUE;
  return begin(hStream, mode, false, hGraph, dependencies, numDependencies);
}
FC_API CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                                 const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                 CUstreamCaptureMode mode) {
  if (!hGraph) return CUDA_ERROR_INVALID_VALUE;
  return begin(hStream, mode, true, hGraph, dependencies, numDependencies);
}

FC_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) { return end(hStream, phGraph, false); }
FC_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) { return end(hStream, phGraph, true); }

FC_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  return is_capturing(hStream, captureStatus, false);
}
FC_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  return is_capturing(hStream, captureStatus, true);
}

FC_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                       cuuint64_t *id_out) {
  return info(hStream, false, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
}
FC_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                            cuuint64_t *id_out) {
  return info(hStream, true, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
}
FC_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                          cuuint64_t *id_out, CUgraph *graph_out,
                                          const CUgraphNode **dependencies_out, size_t *numDependencies_out) {
  return info(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out, nullptr, numDependencies_out);
}
FC_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                               cuuint64_t *id_out, CUgraph *graph_out,
                                               const CUgraphNode **dependencies_out, size_t *numDependencies_out) {
  return info(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, nullptr, numDependencies_out);
}
FC_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                          cuuint64_t *id_out, CUgraph *graph_out,
                                          const CUgraphNode **dependencies_out,
                                          const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out) {
  return info(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
              numDependencies_out);
}
FC_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                               cuuint64_t *id_out, CUgraph *graph_out,
                                               const CUgraphNode **dependencies_out,
                                               const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out) {
  return info(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
              numDependencies_out);
}

FC_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = t_mode;
  t_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
