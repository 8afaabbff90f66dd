// CUDA graphs with memory nodes and stream capture on the simulated driver, linked with -lcuda
// (tests/e2e/graph_test.cpp runs it under libvramtrace.so and checks the report against the
// figures printed here, which are the driver's own: cuDeviceGetGraphMemAttribute, cuMemGetInfo).
//   graph    explicit memory nodes: cuGraphAddMemAllocNode + cuGraphAddMemFreeNode, and
//            cuGraphAddNode_v2 with MEM_ALLOC / MEM_FREE params (and a kernel-free empty node);
//            instantiate, upload, 5 launches, destroy the executable graph, trim, destroy.
//            A 16 MiB cuMemAlloc is live throughout the launches (the peak holds both).
//   capture  cuMemAllocAsync / cuMemFreeAsync captured on a stream (8, 2 and 4 MiB; the 4 MiB one
//            not freed in the graph), while another stream allocates 1 MiB for real; the graph
//            is launched once, its 4 MiB allocation freed with cuMemFreeAsync, then everything
//            destroyed and trimmed.
//   capture-ptsz  cuStreamBeginCaptureToGraph_ptsz on the per-thread default stream: two captured
//            allocations, then a real 3 MiB one after the capture ended (left to the context's teardown).
//   oom      a graph whose upload takes 10 GiB of the 16 GiB device, then a 8 GiB cuMemAlloc fails.
//   capture-many  70 streams capturing at once (more than the recorder's 64-slot table of
//            capturing streams: its fallback asks the driver on every allocation); a captured
//            cuMemAllocAsync on the first and the last, a real one on a stream not capturing.
//   outside-free  a captured cuMemFreeAsync of memory allocated outside any graph: the driver
//            refuses it (a free node needs a graph allocation) and the capture is invalidated;
//            the memory stays allocated until a real cuMemFreeAsync.
//   current-pool  no graph: the stream-ordered allocations a graph would capture, from a pool made
//            the device's current one (cuDeviceSetMemPool): 6 MiB allocated and freed, 2 MiB left
//            live, the pool trimmed; then the default pool current again (its release threshold
//            set to keep everything) and 1 MiB from it, freed.
//   release-at-sync  no graph: rule 15. The default pool (release threshold 0) allocates and frees
//            8 MiB, then a synchronize gives it back; a pool created with the threshold at its
//            maximum keeps its 4 MiB through one; a third pool (threshold 0) frees 2 of its 4 MiB
//            and is not synchronized after: it keeps both. Synchronizes with no free before them
//            (cuCtxSynchronize, cuEventSynchronize) write no record.
//   named-default  no graph: rule 4 with 15. The default pool named by its handle
//            (cuMemGetDefaultMemPool), its release threshold set to keep everything through that
//            handle, then 8 MiB from cuMemAllocAsync (no current pool set) freed and synchronized:
//            kept.
//   child-direct, child-moved  the same memory nodes (3 MiB allocated and freed, 5 MiB allocated
//            and left live) in the launched graph itself, or in a child graph moved into it
//            (cuGraphAddNode with GRAPH params, CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE: cloning a graph
//            with memory nodes is refused, cuda.h) beside a cloned child graph without any
//            (cuGraphAddChildGraphNode), after cuGraphAddNode's clone of it was refused too (its
//            handle and its parent's printed); uploaded, launched, the 5 MiB freed with cuMemFreeAsync,
//            launched again and freed again, destroyed and trimmed; a 16 MiB cuMemAlloc throughout.
// Prints "name value" lines (bytes or counts).
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "primary_context.h"

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "graph_memory: %s failed: %d\n", what, int(r));
    exit(1);
  }
}

cuuint64_t attr(CUgraphMem_attribute a) {
  cuuint64_t v = 0;
  check(cuDeviceGetGraphMemAttribute(0, a, &v), "cuDeviceGetGraphMemAttribute");
  return v;
}
cuuint64_t reserved() { return attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT); }
cuuint64_t used() { return attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT); }

CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

constexpr size_t MiB = 1 << 20;

int graph_mode(CUstream s) {
  CUdeviceptr big = 0;
  check(cuMemAlloc(&big, 16 * MiB), "cuMemAlloc");
  CUgraph g;
  check(cuGraphCreate(&g, 0), "cuGraphCreate");
  CUgraphNode a, fa, c, fc, empty;
  CUDA_MEM_ALLOC_NODE_PARAMS pa = alloc_params(3 * MiB);
  check(cuGraphAddMemAllocNode(&a, g, nullptr, 0, &pa), "cuGraphAddMemAllocNode");
  check(cuGraphAddMemFreeNode(&fa, g, &a, 1, pa.dptr), "cuGraphAddMemFreeNode");
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  np.alloc.poolProps = alloc_params(0).poolProps;
  np.alloc.bytesize = 5 * MiB;
  check(cuGraphAddNode(&c, g, &fa, nullptr, 1, &np), "cuGraphAddNode_v2 (alloc)");
  CUdeviceptr c_ptr = np.alloc.dptr;
  CUgraphNodeParams nf;
  memset(&nf, 0, sizeof nf);
  nf.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
  nf.free.dptr = c_ptr;
  check(cuGraphAddNode(&fc, g, &c, nullptr, 1, &nf), "cuGraphAddNode_v2 (free)");
  CUgraphNodeParams ne;
  memset(&ne, 0, sizeof ne);
  ne.type = CU_GRAPH_NODE_TYPE_EMPTY;
  check(cuGraphAddNode(&empty, g, &fc, nullptr, 1, &ne), "cuGraphAddNode_v2 (empty)");
  printf("nodes 2\nnode_bytes %zu\n", 8 * MiB);

  CUgraphExec x;
  check(cuGraphInstantiate(&x, g, 0), "cuGraphInstantiateWithFlags");
  check(cuGraphUpload(x, s), "cuGraphUpload");
  printf("reserved_after_upload %llu\nused_after_upload %llu\n", (unsigned long long)reserved(),
         (unsigned long long)used());
  for (int i = 0; i < 5; ++i) check(cuGraphLaunch(x, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("reserved_after_launches %llu\nused_after_launches %llu\n", (unsigned long long)reserved(),
         (unsigned long long)used());
  printf("reserved_max %llu\n", (unsigned long long)attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH));
  check(cuMemFree(big), "cuMemFree");
  check(cuGraphExecDestroy(x), "cuGraphExecDestroy");
  printf("reserved_after_exec_destroy %llu\nused_after_exec_destroy %llu\n", (unsigned long long)reserved(),
         (unsigned long long)used());
  check(cuDeviceGraphMemTrim(0), "cuDeviceGraphMemTrim");
  check(cuGraphDestroy(g), "cuGraphDestroy");
  printf("reserved_end %llu\nused_end %llu\n", (unsigned long long)reserved(), (unsigned long long)used());
  return 0;
}

int child_mode(CUstream s, bool moved) {
  CUdeviceptr big = 0;
  check(cuMemAlloc(&big, 16 * MiB), "cuMemAlloc");
  CUgraph inner;
  check(cuGraphCreate(&inner, 0), "cuGraphCreate");
  CUgraphNode a, fa, b;
  CUDA_MEM_ALLOC_NODE_PARAMS pa = alloc_params(3 * MiB), pb = alloc_params(5 * MiB);
  check(cuGraphAddMemAllocNode(&a, inner, nullptr, 0, &pa), "cuGraphAddMemAllocNode");
  check(cuGraphAddMemFreeNode(&fa, inner, &a, 1, pa.dptr), "cuGraphAddMemFreeNode");
  check(cuGraphAddMemAllocNode(&b, inner, &fa, 1, &pb), "cuGraphAddMemAllocNode");
  printf("nodes 2\nnode_bytes %zu\n", 8 * MiB);
  CUgraph top = inner;
  if (moved) {
    CUgraph plain;
    check(cuGraphCreate(&plain, 0), "cuGraphCreate");
    CUgraphNode empty, cloned, child;
    check(cuGraphAddEmptyNode(&empty, plain, nullptr, 0), "cuGraphAddEmptyNode");
    check(cuGraphCreate(&top, 0), "cuGraphCreate");
    check(cuGraphAddChildGraphNode(&cloned, top, nullptr, 0, plain), "cuGraphAddChildGraphNode");
    check(cuGraphDestroy(plain), "cuGraphDestroy");  // the node holds a copy
    CUresult r = cuGraphAddChildGraphNode(&child, top, &cloned, 1, inner);
    printf("clone_refused %d\n", r == CUDA_ERROR_INVALID_VALUE ? 1 : 0);
    CUgraphNodeParams gp;
    memset(&gp, 0, sizeof gp);
    gp.type = CU_GRAPH_NODE_TYPE_GRAPH;
    gp.graph.graph = inner;
    gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE;
    r = cuGraphAddNode(&child, top, &cloned, nullptr, 1, &gp);
    printf("clone_node_refused %d\n", r == CUDA_ERROR_INVALID_VALUE ? 1 : 0);
    gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    check(cuGraphAddNode(&child, top, &cloned, nullptr, 1, &gp), "cuGraphAddNode_v2 (child graph, moved)");
    printf("child_graph %llu\nparent_graph %llu\n", (unsigned long long)(uintptr_t)inner,
           (unsigned long long)(uintptr_t)top);
  }
  CUgraphExec x;
  check(cuGraphInstantiate(&x, top, 0), "cuGraphInstantiateWithFlags");
  check(cuGraphUpload(x, s), "cuGraphUpload");
  printf("reserved_after_upload %llu\nused_after_upload %llu\n", (unsigned long long)reserved(),
         (unsigned long long)used());
  for (int i = 0; i < 2; ++i) {
    check(cuGraphLaunch(x, s), "cuGraphLaunch");
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
    if (i == 0)
      printf("reserved_after_launch %llu\nused_after_launch %llu\n", (unsigned long long)reserved(),
             (unsigned long long)used());
    check(cuMemFreeAsync(pb.dptr, s), "cuMemFreeAsync (graph allocation)");  // else no relaunch
    check(cuStreamSynchronize(s), "cuStreamSynchronize");
  }
  printf("reserved_max %llu\n", (unsigned long long)attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH));
  check(cuMemFree(big), "cuMemFree");
  check(cuGraphExecDestroy(x), "cuGraphExecDestroy");
  check(cuDeviceGraphMemTrim(0), "cuDeviceGraphMemTrim");
  check(cuGraphDestroy(top), "cuGraphDestroy");  // and the child graph moved into it
  printf("reserved_end %llu\nused_end %llu\n", (unsigned long long)reserved(), (unsigned long long)used());
  return 0;
}

int capture_mode(CUstream s) {
  CUstream other;
  check(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture_v2");
  CUdeviceptr p8, p2, p4, real;
  check(cuMemAllocAsync(&p8, 8 * MiB, s), "cuMemAllocAsync (captured)");
  check(cuMemAllocAsync(&real, 1 * MiB, other), "cuMemAllocAsync (real)");
  check(cuMemAllocAsync(&p2, 2 * MiB, s), "cuMemAllocAsync (captured)");
  check(cuMemFreeAsync(p8, s), "cuMemFreeAsync (captured)");
  check(cuMemAllocAsync(&p4, 4 * MiB, s), "cuMemAllocAsync (captured)");
  check(cuMemFreeAsync(p2, s), "cuMemFreeAsync (captured)");
  CUgraph g;
  check(cuStreamEndCapture(s, &g), "cuStreamEndCapture");
  printf("captured 3\ncaptured_bytes %zu\nreal_live_during_capture %zu\n", 14 * MiB, 1 * MiB);
  CUgraphExec x;
  check(cuGraphInstantiate(&x, g, 0), "cuGraphInstantiateWithFlags");
  check(cuGraphLaunch(x, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("reserved_after_launch %llu\nused_after_launch %llu\n", (unsigned long long)reserved(),
         (unsigned long long)used());
  check(cuMemFreeAsync(p4, s), "cuMemFreeAsync (graph allocation)");
  check(cuMemFreeAsync(real, other), "cuMemFreeAsync (real)");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuStreamSynchronize(other), "cuStreamSynchronize");
  check(cuGraphExecDestroy(x), "cuGraphExecDestroy");
  check(cuGraphDestroy(g), "cuGraphDestroy");
  check(cuDeviceGraphMemTrim(0), "cuDeviceGraphMemTrim");
  printf("reserved_end %llu\n", (unsigned long long)reserved());
  check(cuStreamDestroy(other), "cuStreamDestroy");
  return 0;
}

}  // namespace

extern "C" {  // the per-thread-default-stream exports (cuda.h declares them only under its macros)
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream, CUgraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,
                                          CUstreamCaptureMode);
CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph*);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
}

namespace {

// Capture into an existing graph on the per-thread default stream (stream 0 with _ptsz), in
// relaxed mode, while the legacy-stream view of the same handle is not capturing.
int capture_ptsz_mode() {
  CUgraph g;
  check(cuGraphCreate(&g, 0), "cuGraphCreate");
  check(cuStreamBeginCaptureToGraph_ptsz(nullptr, g, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED),
        "cuStreamBeginCaptureToGraph_ptsz");
  CUdeviceptr a, b;
  check(cuMemAllocAsync_ptsz(&a, 6 * MiB, nullptr), "cuMemAllocAsync_ptsz (captured)");
  check(cuMemAllocAsync_ptsz(&b, 2 * MiB, nullptr), "cuMemAllocAsync_ptsz (captured)");
  check(cuMemFreeAsync_ptsz(a, nullptr), "cuMemFreeAsync_ptsz (captured)");
  check(cuMemFreeAsync_ptsz(b, nullptr), "cuMemFreeAsync_ptsz (captured)");
  CUgraph out;
  check(cuStreamEndCapture_ptsz(nullptr, &out), "cuStreamEndCapture_ptsz");
  CUdeviceptr after;  // the capture ended: a real allocation again
  check(cuMemAllocAsync_ptsz(&after, 3 * MiB, nullptr), "cuMemAllocAsync_ptsz (real)");
  printf("captured 2\ncaptured_bytes %zu\nreal_live_at_end %zu\n", 8 * MiB, 3 * MiB);
  check(cuGraphDestroy(g), "cuGraphDestroy");
  return 0;  // `after` is left allocated: the primary context's last release frees it
}

int oom_mode(CUstream s) {
  CUgraph g;
  check(cuGraphCreate(&g, 0), "cuGraphCreate");
  CUgraphNode a, fa;
  CUDA_MEM_ALLOC_NODE_PARAMS pa = alloc_params(size_t(10) << 30);
  check(cuGraphAddMemAllocNode(&a, g, nullptr, 0, &pa), "cuGraphAddMemAllocNode");
  check(cuGraphAddMemFreeNode(&fa, g, &a, 1, pa.dptr), "cuGraphAddMemFreeNode");
  CUgraphExec x;
  check(cuGraphInstantiate(&x, g, 0), "cuGraphInstantiateWithFlags");
  check(cuGraphLaunch(x, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("reserved_at_oom %llu\nused_at_oom %llu\n", (unsigned long long)reserved(), (unsigned long long)used());
  CUdeviceptr p = 0;
  CUresult r = cuMemAlloc(&p, size_t(8) << 30);
  printf("oom_result %d\n", int(r));
  check(cuGraphExecDestroy(x), "cuGraphExecDestroy");
  check(cuGraphDestroy(g), "cuGraphDestroy");
  check(cuDeviceGraphMemTrim(0), "cuDeviceGraphMemTrim");
  r = cuMemAlloc(&p, size_t(8) << 30);  // fits once the graph pool is trimmed
  printf("after_trim_result %d\n", int(r));
  if (r == CUDA_SUCCESS) check(cuMemFree(p), "cuMemFree");
  return 0;
}

int capture_many_mode(CUstream s) {
  constexpr int kStreams = 70;
  CUstream st[kStreams];
  for (CUstream& x : st) {
    check(cuStreamCreate(&x, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cuStreamBeginCapture(x, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture_v2");
  }
  CUdeviceptr first, last, real;
  check(cuMemAllocAsync(&first, 2 * MiB, st[0]), "cuMemAllocAsync (captured, first)");
  check(cuMemAllocAsync(&last, 4 * MiB, st[kStreams - 1]), "cuMemAllocAsync (captured, last)");
  check(cuMemAllocAsync(&real, 1 * MiB, s), "cuMemAllocAsync (real)");
  for (CUstream& x : st) {
    CUgraph g;
    check(cuStreamEndCapture(x, &g), "cuStreamEndCapture");
    check(cuGraphDestroy(g), "cuGraphDestroy");
    check(cuStreamDestroy(x), "cuStreamDestroy");
  }
  check(cuMemFreeAsync(real, s), "cuMemFreeAsync (real)");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("captured 2\ncaptured_bytes %zu\nreal_peak %zu\n", 6 * MiB, 1 * MiB);
  return 0;
}

int outside_free_mode(CUstream s) {
  CUdeviceptr outside;
  check(cuMemAllocAsync(&outside, 4 * MiB, s), "cuMemAllocAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture_v2");
  const CUresult captured_free = cuMemFreeAsync(outside, s);
  CUgraph g = nullptr;
  const CUresult end = cuStreamEndCapture(s, &g);
  if (g) check(cuGraphDestroy(g), "cuGraphDestroy");
  printf("captured_free_result %d\nend_capture_result %d\nlive_after_capture %zu\n", int(captured_free), int(end),
         4 * MiB);
  check(cuMemFreeAsync(outside, s), "cuMemFreeAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  return 0;
}

// A pool's properties for device memory on GPU 0.
CUmemPoolProps device0_pool() {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  return props;
}

int current_pool_mode(CUstream s) {
  const CUmemPoolProps props = device0_pool();
  CUmemoryPool mine, def;
  check(cuMemPoolCreate(&mine, &props), "cuMemPoolCreate");
  check(cuDeviceGetDefaultMemPool(&def, 0), "cuDeviceGetDefaultMemPool");
  check(cuDeviceSetMemPool(0, mine), "cuDeviceSetMemPool");
  CUdeviceptr a, b, c;
  check(cuMemAllocAsync(&a, 6 * MiB, s), "cuMemAllocAsync");
  check(cuMemFreeAsync(a, s), "cuMemFreeAsync");
  check(cuMemAllocAsync(&b, 2 * MiB, s), "cuMemAllocAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemPoolTrimTo(mine, 0), "cuMemPoolTrimTo");
  check(cuDeviceSetMemPool(0, def), "cuDeviceSetMemPool (default)");
  cuuint64_t keep_all = ~cuuint64_t(0);  // (as PyTorch sets it: the synchronize below keeps the 1 MiB)
  check(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all), "cuMemPoolSetAttribute");
  check(cuMemAllocAsync(&c, 1 * MiB, s), "cuMemAllocAsync (default pool)");
  check(cuMemFreeAsync(c, s), "cuMemFreeAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("pool %llu\ndefault_pool %llu\nlive_in_pool %zu\n", (unsigned long long)(uintptr_t)mine,
         (unsigned long long)(uintptr_t)def, 2 * MiB);
  return 0;  // b is left allocated: the primary context's last release frees it
}

// Stream-ordered memory freed by cuMemFree (allowed: a synchronous free), then a synchronize:
// the default pool (threshold 0) gives it back there.
int plain_free_mode(CUstream s) {
  CUdeviceptr a;
  check(cuMemAllocAsync(&a, 8 * MiB, s), "cuMemAllocAsync (default pool)");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  size_t free_before = 0, free_after = 0, total = 0;
  check(cuMemGetInfo(&free_before, &total), "cuMemGetInfo");
  check(cuMemFree(a), "cuMemFree (stream-ordered memory)");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemGetInfo(&free_after, &total), "cuMemGetInfo");
  printf("released %zu\n", free_after - free_before);
  return 0;
}

int release_at_sync_mode(CUstream s) {
  CUdeviceptr a, b, c, d;
  check(cuMemAllocAsync(&a, 8 * MiB, s), "cuMemAllocAsync (default pool)");
  check(cuMemFreeAsync(a, s), "cuMemFreeAsync");
  size_t free_before = 0, free_after = 0, total = 0;
  check(cuMemGetInfo(&free_before, &total), "cuMemGetInfo");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemGetInfo(&free_after, &total), "cuMemGetInfo");
  check(cuCtxSynchronize(), "cuCtxSynchronize");  // nothing freed since: no record
  CUevent ev;
  check(cuEventCreate(&ev, 0), "cuEventCreate");
  check(cuEventRecord(ev, s), "cuEventRecord");
  check(cuEventSynchronize(ev), "cuEventSynchronize");  // nor here
  check(cuEventDestroy(ev), "cuEventDestroy");

  const CUmemPoolProps props = device0_pool();
  CUmemoryPool keep, lazy;
  check(cuMemPoolCreate(&keep, &props), "cuMemPoolCreate");
  cuuint64_t keep_all = ~cuuint64_t(0);
  check(cuMemPoolSetAttribute(keep, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all), "cuMemPoolSetAttribute");
  check(cuMemAllocFromPoolAsync(&b, 4 * MiB, keep, s), "cuMemAllocFromPoolAsync (keep)");
  check(cuMemFreeAsync(b, s), "cuMemFreeAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  check(cuMemPoolCreate(&lazy, &props), "cuMemPoolCreate");
  check(cuMemAllocFromPoolAsync(&c, 2 * MiB, lazy, s), "cuMemAllocFromPoolAsync (lazy)");
  check(cuMemAllocFromPoolAsync(&d, 2 * MiB, lazy, s), "cuMemAllocFromPoolAsync (lazy)");
  check(cuMemFreeAsync(c, s), "cuMemFreeAsync");
  printf("released_by_sync %zu\nkeep_pool %llu\nlazy_pool %llu\n", free_after - free_before,
         (unsigned long long)(uintptr_t)keep, (unsigned long long)(uintptr_t)lazy);
  return 0;  // d and the pools are left to the primary context's last release
}

// `per_device`: the handle from cuDeviceGetDefaultMemPool, as cudart's cudaDeviceGetDefaultMemPool
// (and so PyTorch's backend:cudaMallocAsync) gets it; else CUDA 13's by-location form.
int named_default_mode(CUstream s, bool per_device) {
  CUmemLocation loc{};
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = 0;
  CUmemoryPool def;
  if (per_device)
    check(cuDeviceGetDefaultMemPool(&def, 0), "cuDeviceGetDefaultMemPool");
  else
    check(cuMemGetDefaultMemPool(&def, &loc, CU_MEM_ALLOCATION_TYPE_PINNED), "cuMemGetDefaultMemPool");
  cuuint64_t keep_all = ~cuuint64_t(0);  // (as PyTorch's backend:cudaMallocAsync sets it)
  check(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all), "cuMemPoolSetAttribute");
  CUdeviceptr a;
  check(cuMemAllocAsync(&a, 8 * MiB, s), "cuMemAllocAsync");
  check(cuMemFreeAsync(a, s), "cuMemFreeAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  cuuint64_t reserved = 0;
  check(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), "cuMemPoolGetAttribute");
  printf("default_pool %llu\nreserved %llu\n", (unsigned long long)(uintptr_t)def, (unsigned long long)reserved);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const CUdevice dev = make_primary_context_current(check);
  CUstream s;
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  int rc = mode == "graph"          ? graph_mode(s)
           : mode == "capture"      ? capture_mode(s)
           : mode == "capture-ptsz" ? capture_ptsz_mode()
           : mode == "oom"          ? oom_mode(s)
           : mode == "current-pool" ? current_pool_mode(s)
           : mode == "release-at-sync" ? release_at_sync_mode(s)
           : mode == "plain-free" ? plain_free_mode(s)
           : mode == "named-default" ? named_default_mode(s, false)
           : mode == "named-default-device" ? named_default_mode(s, true)
           : mode == "capture-many" ? capture_many_mode(s)
           : mode == "outside-free" ? outside_free_mode(s)
           : mode == "child-direct" ? child_mode(s, false)
           : mode == "child-moved"  ? child_mode(s, true)
                                    : 2;
  check(cuStreamDestroy(s), "cuStreamDestroy");
  check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  return rc;
}
