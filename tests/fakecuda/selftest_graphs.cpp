// selftest_graphs.cpp — graphs with memory nodes (virtual addresses at node creation, physical
// memory at upload/launch inside the driver, the graph pool's attributes, trim, ownership
// rules) and stream capture (allocations on a capturing stream become nodes; the rules that
// invalidate a capture). Runs with the primary context of device 0 current.
#include "selftest.h"

#include <cstring>
#include <thread>

namespace selftest {
namespace {

cuuint64_t graph_attr(CUgraphMem_attribute attr) {
  cuuint64_t v = ~0ull;
  OK(cuDeviceGetGraphMemAttribute(0, attr, &v));
  return v;
}

CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  p.bytesize = bytes;
  return p;
}

bool has_memory(CUdeviceptr p) {
  CUdeviceptr base;
  size_t size;
  return cuMemGetAddressRange_v2(&base, &size, p) == CUDA_SUCCESS;
}

}  // namespace

void test_graphs() {
  const size_t base_free = free_mem();
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);

  // Nodes: an address at once, no memory.
  CUgraph g = nullptr;
  CHECK_RC(cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphCreate(&g, 0));
  CUgraphNode inner = nullptr, freer = nullptr, outer = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS p = alloc_params(3 * MiB);
  OK(cuGraphAddMemAllocNode(&inner, g, nullptr, 0, &p));
  const CUdeviceptr internal = p.dptr;
  CHECK(internal != 0 && internal % (2 * MiB) == 0);
  CHECK(free_mem() == base_free);
  CHECK(!has_memory(internal));
  OK(cuGraphAddMemFreeNode(&freer, g, &inner, 1, internal));
  CUgraphNode dup[2] = {inner, inner};
  CHECK_RC(cuGraphAddMemFreeNode(&freer, g, dup, 2, internal), CUDA_ERROR_INVALID_VALUE);  // duplicate deps
  CHECK_RC(cuGraphAddMemFreeNode(&freer, g, &inner, 1, internal), CUDA_ERROR_INVALID_VALUE);  // freed twice
  CHECK_RC(cuGraphAddMemFreeNode(&freer, g, nullptr, 0, internal + 512), CUDA_ERROR_INVALID_VALUE);  // not a node's
  // The generic node API makes the same allocation nodes (CUDA 12.3 ABI).
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  np.alloc.poolProps = p.poolProps;
  np.alloc.bytesize = 10 * MiB;
  OK(cuGraphAddNode(&outer, g, &freer, nullptr, 1, &np));
  const CUdeviceptr escaping = np.alloc.dptr;  // not freed in its graph
  CHECK(escaping != 0 && escaping != internal);
  CUgraphNodeType type;
  OK(cuGraphNodeGetType(outer, &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CUDA_MEM_ALLOC_NODE_PARAMS back;
  OK(cuGraphMemAllocNodeGetParams(outer, &back));
  CHECK(back.bytesize == 10 * MiB && back.dptr == escaping);
  CUdeviceptr freed = 0;
  OK(cuGraphMemFreeNodeGetParams(freer, &freed));
  CHECK(freed == internal);
  size_t count = 0;
  OK(cuGraphGetNodes(g, nullptr, &count));
  CHECK(count == 3);
  CHECK_RC(cuGraphDestroyNode(outer), CUDA_ERROR_NOT_SUPPORTED);  // graphs with memory nodes
  CUDA_MEM_ALLOC_NODE_PARAMS bad = alloc_params(1);
  bad.poolProps.location.id = 7;
  CHECK_RC(cuGraphAddMemAllocNode(&inner, g, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = alloc_params(1);
  bad.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // "IPC is not supported"
  CHECK_RC(cuGraphAddMemAllocNode(&inner, g, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);

  // Instantiation maps nothing; only one executable graph at a time.
  CUgraphExec exec = nullptr, second = nullptr;
  OK(cuGraphInstantiate(&exec, g, 0));
  CHECK_RC(cuGraphInstantiate(&second, g, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK(free_mem() == base_free);

  // Upload: the driver takes the graph's memory (4 + 10 MiB in 2 MiB pages), no call for it.
  OK(cuGraphUpload(exec, nullptr));
  CHECK(free_mem() == base_free - 14 * MiB);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 14 * MiB);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 14 * MiB);
  CHECK(!has_memory(escaping));  // mapped, not yet allocated: its lifetime starts when the graph runs

  // Launch: nothing more to map; the allocation not freed in the graph is now live.
  OK(cuGraphLaunch(exec, nullptr));
  CHECK(free_mem() == base_free - 14 * MiB);
  CHECK(has_memory(escaping));
  CHECK_RC(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);  // its allocation is still live
  CHECK_RC(cuMemFree_v2(internal), CUDA_ERROR_INVALID_VALUE);        // freed in its own graph only

  // Freeing it outside the graph: the graph pool keeps the memory (reserved, not used).
  OK(cuMemFreeAsync(escaping, nullptr));
  CHECK(!has_memory(escaping));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 4 * MiB);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 14 * MiB);
  CHECK(free_mem() == base_free - 14 * MiB);
  CHECK_RC(cuMemFreeAsync(escaping, nullptr), CUDA_ERROR_INVALID_VALUE);  // not live any more
  OK(cuGraphLaunch(exec, nullptr));  // reuses the cached memory
  CHECK(free_mem() == base_free - 14 * MiB);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 14 * MiB);

  // Trim releases everything no running graph or live allocation uses.
  OK(cuDeviceGraphMemTrim(0));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 10 * MiB);  // the live one
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);
  CHECK(free_mem() == base_free - 10 * MiB);
  OK(cuMemFree_v2(escaping));
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
  OK(cuGraphLaunch(exec, nullptr));  // the next launch maps it all again
  CHECK(free_mem() == base_free - 14 * MiB);

  // Watermarks: reset to "zero" restarts them from the current value; the rest is read-only.
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 14 * MiB);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 14 * MiB);
  cuuint64_t zero = 0, one = 1;
  CHECK_RC(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &zero), CUDA_ERROR_INVALID_VALUE);

  // Destroying the executable graph unbinds its memory (still reserved); the live allocation stays.
  OK(cuGraphExecDestroy(exec));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 10 * MiB);
  CHECK(free_mem() == base_free - 14 * MiB);
  OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) == 10 * MiB);
  CHECK_RC(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);

  // A free node in another graph frees it when that graph runs.
  CUgraph g2;
  CUgraphNode free2;
  OK(cuGraphCreate(&g2, 0));
  OK(cuGraphAddMemFreeNode(&free2, g2, nullptr, 0, escaping));
  CHECK_RC(cuGraphAddMemFreeNode(&free2, g, nullptr, 0, escaping), CUDA_ERROR_INVALID_VALUE);  // freed elsewhere
  CUgraphExec exec2;
  OK(cuGraphInstantiate(&exec2, g2, 0));
  OK(cuGraphLaunch(exec2, nullptr));
  CHECK(!has_memory(escaping));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0);
  OK(cuGraphExecDestroy(exec2));
  OK(cuGraphDestroy(g2));

  // AUTO_FREE_ON_LAUNCH: relaunching frees what the last launch left live.
  OK(cuGraphInstantiate(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  OK(cuGraphLaunch(exec, nullptr));
  OK(cuGraphLaunch(exec, nullptr));
  CHECK(has_memory(escaping));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 14 * MiB);
  CHECK_RC(cuGraphInstantiate(&second, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                              CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
           CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphExecDestroy(exec));

  // Destroying the graph frees no live memory ("must subsequently be freed").
  OK(cuGraphDestroy(g));
  CHECK(has_memory(escaping));
  OK(cuMemFree_v2(escaping));
  CHECK(!has_memory(escaping));
  CHECK_RC(cuMemFree_v2(escaping), CUDA_ERROR_INVALID_VALUE);
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);

  // Graph memory that does not fit: the upload fails and nothing changes.
  OK(cuGraphCreate(&g, 0));
  p = alloc_params(base_free + 2 * MiB);
  OK(cuGraphAddMemAllocNode(&inner, g, nullptr, 0, &p));
  OK(cuGraphInstantiate(&exec, g, 0));
  CHECK_RC(cuGraphUpload(exec, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(cuGraphLaunch(exec, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(free_mem() == base_free);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);
  OK(cuGraphExecDestroy(exec));
  OK(cuGraphDestroy(g));

  // InstantiateWithParams with UPLOAD maps at once.
  OK(cuGraphCreate(&g, 0));
  p = alloc_params(1);
  OK(cuGraphAddMemAllocNode(&inner, g, nullptr, 0, &p));
  OK(cuGraphAddMemFreeNode(&freer, g, &inner, 1, p.dptr));
  CUDA_GRAPH_INSTANTIATE_PARAMS ip;
  memset(&ip, 0, sizeof ip);
  ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  ip.result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  OK(cuGraphInstantiateWithParams(&exec, g, &ip));
  CHECK(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS);
  CHECK(free_mem() == base_free - 2 * MiB);
  CHECK_RC(cuGraphInstantiate(&second, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphExecDestroy(exec));
  OK(cuGraphDestroy(g));
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);

  // Child graphs. A clone embeds a copy, and refuses a graph with memory nodes; a moved graph
  // brings its memory nodes into the parent, whose instantiation maps them.
  CUgraph child, plain, parent;
  OK(cuGraphCreate(&child, 0));
  OK(cuGraphCreate(&plain, 0));
  OK(cuGraphCreate(&parent, 0));
  CUgraphNode empty, node, cloned, moved, in_child, child_free;
  OK(cuGraphAddEmptyNode(&empty, plain, nullptr, 0));
  OK(cuGraphAddChildGraphNode(&cloned, parent, nullptr, 0, plain));
  CUgraph embedded = nullptr;
  OK(cuGraphChildGraphNodeGetGraph(cloned, &embedded));
  CHECK(embedded != nullptr && embedded != plain);  // a copy
  count = 0;
  OK(cuGraphGetNodes(embedded, nullptr, &count));
  CHECK(count == 1);
  p = alloc_params(3 * MiB);
  CHECK_RC(cuGraphAddMemAllocNode(&node, embedded, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuGraphDestroy(embedded), CUDA_ERROR_INVALID_VALUE);  // the node owns it
  OK(cuGraphDestroy(plain));  // the copy stays
  OK(cuGraphGetNodes(embedded, nullptr, &count));
  CHECK(count == 1);
  p = alloc_params(3 * MiB);
  OK(cuGraphAddMemAllocNode(&in_child, child, nullptr, 0, &p));
  const CUdeviceptr freed_inside = p.dptr;
  OK(cuGraphAddMemFreeNode(&child_free, child, &in_child, 1, freed_inside));
  p = alloc_params(5 * MiB);
  OK(cuGraphAddMemAllocNode(&node, child, nullptr, 0, &p));
  const CUdeviceptr left_live = p.dptr;
  CHECK_RC(cuGraphAddChildGraphNode(&node, parent, nullptr, 0, child), CUDA_ERROR_INVALID_VALUE);  // memory nodes
  CUgraphNodeParams gp;
  memset(&gp, 0, sizeof gp);
  gp.type = CU_GRAPH_NODE_TYPE_GRAPH;
  gp.graph.graph = child;
  gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE;
  CHECK_RC(cuGraphAddNode_v2(&node, parent, nullptr, nullptr, 0, &gp), CUDA_ERROR_INVALID_VALUE);
  gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  CHECK_RC(cuGraphAddNode_v2(&node, child, nullptr, nullptr, 0, &gp), CUDA_ERROR_INVALID_VALUE);  // into itself
  OK(cuGraphAddNode_v2(&moved, parent, &cloned, nullptr, 1, &gp));
  OK(cuGraphChildGraphNodeGetGraph(moved, &embedded));
  CHECK(embedded == child);  // moved, not copied
  CHECK_RC(cuGraphAddNode_v2(&node, parent, nullptr, nullptr, 0, &gp), CUDA_ERROR_INVALID_VALUE);  // moved twice
  CHECK_RC(cuGraphInstantiate(&exec, child, 0), CUDA_ERROR_INVALID_VALUE);  // not on its own
  CHECK_RC(cuGraphDestroy(child), CUDA_ERROR_INVALID_VALUE);
  p = alloc_params(1 * MiB);
  CHECK_RC(cuGraphAddMemAllocNode(&node, child, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuGraphDestroyNode(cloned), CUDA_ERROR_NOT_SUPPORTED);  // the parent has memory nodes now
  OK(cuGraphInstantiate(&exec, parent, 0));
  CHECK_RC(cuGraphInstantiate(&second, parent, 0), CUDA_ERROR_INVALID_VALUE);  // one at a time
  OK(cuGraphLaunch(exec, nullptr));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 10 * MiB);  // 4 + 6 MiB of pages
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 10 * MiB);
  CHECK(free_mem() == base_free - 10 * MiB);
  CHECK(!has_memory(freed_inside));
  CHECK(has_memory(left_live));  // not freed in the graph: live after the launch
  CHECK_RC(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree_v2(left_live));
  OK(cuGraphExecDestroy(exec));
  OK(cuGraphDestroy(parent));  // and the child with it
  CHECK_RC(cuGraphGetNodes(child, nullptr, &count), CUDA_ERROR_INVALID_VALUE);
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0);

  // An allocation moved in with its graph and freed by a free node of the parent is freed
  // inside the graph: nothing is live after a launch.
  OK(cuGraphCreate(&child, 0));
  OK(cuGraphCreate(&parent, 0));
  p = alloc_params(2 * MiB);
  OK(cuGraphAddMemAllocNode(&in_child, child, nullptr, 0, &p));
  gp.graph.graph = child;
  OK(cuGraphAddNode_v2(&moved, parent, nullptr, nullptr, 0, &gp));
  OK(cuGraphAddMemFreeNode(&child_free, parent, &moved, 1, p.dptr));
  OK(cuGraphInstantiate(&exec, parent, 0));
  OK(cuGraphLaunch(exec, nullptr));
  CHECK(!has_memory(p.dptr));
  CHECK(graph_attr(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 2 * MiB);  // bound to the executable graph
  OK(cuGraphLaunch(exec, nullptr));  // nothing left live: it may run again
  OK(cuGraphExecDestroy(exec));
  OK(cuGraphDestroy(parent));
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);
}

void test_capture() {
  const size_t base_free = free_mem();
  CUmemoryPool def;
  OK(cuDeviceGetDefaultMemPool(&def, 0));
  auto reserved = [def] {
    cuuint64_t v = 0;
    OK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    return v;
  };
  CUstream s = nullptr, nb = nullptr;
  OK(cuStreamCreate(&s, 0));
  OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
  CUstreamCaptureStatus st;
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_RC(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_RC(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

  // A captured allocation is a node: an address, no memory, nothing from the pool.
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_RC(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUdeviceptr a = 0, b = 0;
  OK(cuMemAllocAsync(&a, 5 * MiB, s));
  CHECK(a != 0);
  CHECK(free_mem() == base_free);
  CHECK(reserved() == 0);
  cuuint64_t id = 0;
  CUgraph cg = nullptr;
  const CUgraphNode *deps = nullptr;
  const CUgraphEdgeData *edges = reinterpret_cast<const CUgraphEdgeData *>(1);
  size_t ndeps = 0;
  OK(cuStreamGetCaptureInfo(s, &st, &id, &cg, &deps, &edges, &ndeps));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && cg != nullptr && ndeps == 1 && edges == nullptr);
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  if (ndeps == 1) OK(cuGraphNodeGetType(deps[0], &type));
  CHECK(type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  // An unsafe call in the capturing thread (global mode) fails and invalidates the capture.
  CHECK_RC(cuMemAlloc_v2(&b, MiB), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_RC(cuMemAllocAsync(&b, MiB, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CUgraph out = reinterpret_cast<CUgraph>(1);
  CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(out == nullptr);
  CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_ILLEGAL_STATE);  // no capture any more
  CHECK(free_mem() == base_free);

  // A whole captured allocation: alloc + free become the graph; memory when it runs.
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemAllocAsync(&a, 5 * MiB, s));
  OK(cuMemFreeAsync(a, s));
  OK(cuStreamEndCapture(s, &out));
  CHECK(out != nullptr);
  size_t count = 0;
  OK(cuGraphGetNodes(out, nullptr, &count));
  CHECK(count == 2);
  CUgraphExec exec;
  OK(cuGraphInstantiate(&exec, out, 0));
  OK(cuGraphLaunch(exec, s));
  CHECK(free_mem() == base_free - 6 * MiB);
  CHECK(reserved() == 0);  // graph memory is not the stream-ordered pool's
  OK(cuGraphExecDestroy(exec));
  OK(cuGraphDestroy(out));
  OK(cuDeviceGraphMemTrim(0));
  CHECK(free_mem() == base_free);

  // Freeing memory that is not a graph allocation inside a capture is refused.
  CUdeviceptr plain = 0;
  OK(cuMemAllocAsync(&plain, MiB, s));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemAlloc_v2(&b, MiB));  // relaxed: unsafe calls are allowed
  OK(cuMemFree_v2(b));
  CHECK_RC(cuMemFreeAsync(plain, s), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(cuMemFreeAsync(plain, s));

  // Synchronizing a capturing stream fails and invalidates it; the legacy stream cannot be used
  // while a blocking stream captures (a non-blocking one does not matter).
  OK(cuStreamBeginCapture(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemAllocAsync(&b, MiB, nullptr));  // legacy stream, only a non-blocking stream captures
  OK(cuMemFreeAsync(b, nullptr));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_RC(cuStreamIsCapturing(nullptr, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);  // a query does not invalidate
  CHECK_RC(cuMemAllocAsync(&b, MiB, nullptr), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  OK(cuStreamIsCapturing(s, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_RC(cuStreamSynchronize(nb), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(nb, &st));
  CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_RC(cuStreamEndCapture(nb, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // Other threads: a global capture forbids their unsafe calls unless they are relaxed; a
  // thread-local one does not; ending a non-relaxed capture from another thread is refused.
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUcontext cur;
  OK(cuCtxGetCurrent(&cur));
  std::thread([&] {
    OK(cuCtxSetCurrent(cur));
    CUdeviceptr x;
    OK(cuMemAlloc_v2(&x, MiB));
    OK(cuMemFree_v2(x));
    CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  }).join();
  OK(cuStreamEndCapture(s, &out));
  OK(cuGraphDestroy(out));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  std::thread([&] {
    OK(cuCtxSetCurrent(cur));
    CUdeviceptr x;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuMemAlloc_v2(&x, MiB));  // relaxed: allowed
    OK(cuMemFree_v2(x));
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK_RC(cuMemAlloc_v2(&x, MiB), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);  // global again
  }).join();
  CHECK_RC(cuStreamEndCapture(s, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  // The per-thread default stream can capture, through the _ptsz exports (stream 0 = it).
  auto begin_ptsz = reinterpret_cast<PFN_cuStreamBeginCapture_v10010_ptsz>(proc("cuStreamBeginCapture", 13000, 2));
  auto end_ptsz = reinterpret_cast<PFN_cuStreamEndCapture_v10000_ptsz>(proc("cuStreamEndCapture", 13000, 2));
  auto alloc_ptsz = reinterpret_cast<PFN_cuMemAllocAsync_v11020_ptsz>(proc("cuMemAllocAsync", 13000, 2));
  auto capturing_ptsz = reinterpret_cast<PFN_cuStreamIsCapturing_v10000_ptsz>(proc("cuStreamIsCapturing", 13000, 2));
  if (begin_ptsz && end_ptsz && alloc_ptsz && capturing_ptsz) {
    OK(begin_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(capturing_ptsz(CU_STREAM_PER_THREAD, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    const size_t before = free_mem();  // (the default pool still caches `plain`'s page)
    OK(alloc_ptsz(&a, 3 * MiB, nullptr));
    CHECK(free_mem() == before);
    OK(end_ptsz(CU_STREAM_PER_THREAD, &out));
    OK(cuGraphGetNodes(out, nullptr, &count));
    CHECK(count == 1);
    OK(cuGraphDestroy(out));
  }
  OK(cuStreamDestroy(s));
  OK(cuStreamDestroy(nb));
  OK(cuCtxSynchronize());
  CHECK(free_mem() == base_free);
}

}  // namespace selftest
