// api_graph.cpp — CUDA graphs as far as memory goes: cuGraphCreate/Destroy, memory nodes
// (cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, cuGraphAddNode(_v2) with MEM_ALLOC/MEM_FREE
// params, their GetParams), empty and other nodes, cuGraphGetNodes/cuGraphNodeGetType,
// cuGraphInstantiate* (v1, v2, WithFlags, WithParams), cuGraphUpload, cuGraphLaunch (with _ptsz),
// cuGraphExecDestroy, child graphs (cuGraphAddChildGraphNode, cuGraphAddNode(_v2) with GRAPH
// params, cuGraphChildGraphNodeGetGraph), and the graph allocator: cuDeviceGraphMemTrim and
// cuDeviceGet/SetGraphMemAttribute.
//
// Model (cuda.h's documentation of these calls and the Programming Guide's "Graph Memory
// Nodes"): an allocation node gets its virtual address when it is made, fixed for the node's
// life; no memory. Physical memory comes from the device's graph pool, inside the driver, when
// an executable graph is uploaded or launched (no allocation call is made), in 2 MiB pages per
// allocation (no reuse between allocations of one graph is modelled). After a launch:
//  - an allocation freed inside its graph stays bound to the executable graph (reused by the
//    next launch) until cuGraphExecDestroy or cuDeviceGraphMemTrim;
//  - an allocation not freed inside its graph is live until cuMemFree/cuMemFreeAsync or a
//    launch of a graph with a free node for it; relaunching while it is live fails with
//    INVALID_VALUE unless instantiated with AUTO_FREE_ON_LAUNCH.
// Memory that stops being used stays reserved by the graph pool (and in cuMemGetInfo) until
// cuDeviceGraphMemTrim, which releases everything not live (launches complete immediately
// here, so no graph is ever "executing"). Graphs with memory nodes allow one instantiation at
// a time and no node deletion.
//
// Child graphs (cuda.h: cuGraphAddChildGraphNode, CUDA_CHILD_GRAPH_NODE_PARAMS,
// CUgraphChildGraphNodeOwnership): a child graph node embeds a graph that its parent's
// instantiation runs as part of itself. With CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE (the default,
// and cuGraphAddChildGraphNode) the node holds a copy, and a graph with memory nodes is refused
// (INVALID_VALUE): "memory allocation/free nodes can't be present in the child graph". With
// ..._MOVE the graph itself moves into the parent, memory nodes and all: they are the parent's
// from then on (instantiating the parent maps them, a free node anywhere in the same top graph
// frees inside it), and the moved graph cannot be instantiated, destroyed or moved again, nor be
// given memory nodes (INVALID_VALUE). No embedded graph accepts new memory nodes
// (cuGraphChildGraphNodeGetGraph: "Allocation and free nodes cannot be added to the returned
// graph"). Destroying the parent destroys what it embeds.
#include "state.h"

#include <algorithm>
#include <cstring>

using namespace fc;

namespace {

Graph *find_graph(State &s, CUgraph g) {
  auto it = s.graphs.find(g);
  return it == s.graphs.end() ? nullptr : &it->second;
}

// The graph whose child graph node embeds `g`, or null.
CUgraph parent_of(State &s, CUgraph g) {
  const CUgraphNode owner = s.graphs[g].owner;
  return owner ? s.nodes[owner].graph : nullptr;
}
// The top graph `g` is embedded in (itself when it is none's child).
CUgraph top_of(State &s, CUgraph g) {
  for (CUgraph p = parent_of(s, g); p; p = parent_of(s, g)) g = p;
  return g;
}
// A memory node in `g` is one of every graph that embeds it too.
void mark_mem_nodes(State &s, CUgraph g) {
  for (; g; g = parent_of(s, g)) s.graphs[g].mem_nodes = true;
}

CUresult check_deps(State &s, CUgraph g, const CUgraphNode *deps, size_t n) {
  if (n && !deps) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    auto it = s.nodes.find(deps[i]);
    if (it == s.nodes.end() || it->second.graph != g) return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i; ++j)
      if (deps[j] == deps[i]) return CUDA_ERROR_INVALID_VALUE;  // "may not have any duplicate entries"
  }
  return CUDA_SUCCESS;
}

CUgraphNode add_node(State &s, CUgraph g, CUgraphNodeType type, const CUgraphNode *deps, size_t n) {
  CUgraphNode h = new_handle_as<CUgraphNode>(s, 7);
  Node &node = s.nodes[h];
  node.graph = g;
  node.type = type;
  node.deps.assign(deps, deps + n);
  s.graphs[g].nodes.push_back(h);
  return h;
}

void note_high(GraphMemory &m) {
  m.reserved_high = std::max(m.reserved_high, m.reserved);
  m.used_high = std::max(m.used_high, m.used);
}

// An allocation nobody can reach any more gives its address back.
void maybe_erase(State &s, std::map<CUdeviceptr, GraphAlloc>::iterator it) {
  const GraphAlloc &a = it->second;
  if (a.graph || a.exec || a.state != GraphAllocState::Unmapped) return;
  s.va.free(it->first, a.phys);
  s.graph_allocs.erase(it);
}

void unmap(State &s, GraphAlloc &a) {
  if (a.state == GraphAllocState::Unmapped) return;
  s.devices[a.device].graph.used -= a.phys;  // stays reserved: the graph pool caches it
  a.state = GraphAllocState::Unmapped;
}

// Binds physical memory to every unmapped allocation of the executable graph, taking what
// the graph pool has cached first and the rest from the device. All or nothing.
CUresult map_exec(State &s, Exec &e) {
  std::map<int, Bytes> need;
  for (CUdeviceptr p : e.allocs) {
    const GraphAlloc &a = s.graph_allocs.at(p);
    if (a.state == GraphAllocState::Unmapped) need[a.device] += a.phys;
  }
  std::map<int, Bytes> charged;
  for (auto &[dev, bytes] : need) {
    GraphMemory &m = s.devices[dev].graph;
    const Bytes cached = m.reserved - m.used;
    const Bytes extra = bytes > cached ? bytes - cached : 0;
    if (extra && charge(s.devices[dev], extra)) {
      for (auto &[d, b] : charged) {
        uncharge(s.devices[d], b);
        s.devices[d].graph.reserved -= b;
      }
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m.reserved += extra;
    charged[dev] = extra;
  }
  for (CUdeviceptr p : e.allocs) {
    GraphAlloc &a = s.graph_allocs.at(p);
    if (a.state != GraphAllocState::Unmapped) continue;
    a.state = GraphAllocState::Bound;
    s.devices[a.device].graph.used += a.phys;
  }
  for (auto &[dev, bytes] : need) note_high(s.devices[dev].graph);
  return CUDA_SUCCESS;
}

CUresult alloc_params_ok(State &s, const CUDA_MEM_ALLOC_NODE_PARAMS &p) {
  const CUmemPoolProps &pp = p.poolProps;
  if (pp.allocType != CU_MEM_ALLOCATION_TYPE_PINNED || pp.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (check_device(s, pp.location.id)) return CUDA_ERROR_INVALID_VALUE;
  if (pp.handleTypes != CU_MEM_HANDLE_TYPE_NONE) return CUDA_ERROR_INVALID_VALUE;  // "IPC is not supported"
  if (p.bytesize == 0 || p.bytesize > (1ull << 50)) return CUDA_ERROR_INVALID_VALUE;
  if (p.accessDescCount > s.devices.size() || (p.accessDescCount && !p.accessDescs)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult instantiate(State &s, CUgraphExec *out, CUgraph g, unsigned long long flags) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  Graph *gr = find_graph(s, g);
  if (!gr) return CUDA_ERROR_INVALID_VALUE;
  constexpr unsigned long long kKnown = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
  if (flags & ~kKnown) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH))
    return CUDA_ERROR_INVALID_VALUE;
  if (gr->mem_nodes && gr->exec) return CUDA_ERROR_INVALID_VALUE;  // "at most one executable graph"
  if (gr->moved) return CUDA_ERROR_INVALID_VALUE;  // "cannot be independently instantiated"
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  CUgraphExec h = new_handle_as<CUgraphExec>(s, 8);
  Exec &e = s.execs[h];
  e.graph = g;
  e.flags = flags;
  e.ctx = ctx;
  // The graph's nodes and those of every graph it embeds.
  std::vector<CUdeviceptr> frees;
  std::vector<CUgraph> todo = {g};
  while (!todo.empty()) {
    const CUgraph cur = todo.back();
    todo.pop_back();
    for (CUgraphNode n : s.graphs[cur].nodes) {
      const Node &node = s.nodes[n];
      if (node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        e.allocs.push_back(node.dptr);
        s.graph_allocs[node.dptr].exec = h;
      } else if (node.type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        frees.push_back(node.dptr);
      } else if (node.type == CU_GRAPH_NODE_TYPE_GRAPH && node.child) {
        todo.push_back(node.child);
      }
    }
  }
  for (CUdeviceptr p : frees)  // the free nodes of other graphs' allocations
    if (s.graph_allocs.count(p) && std::find(e.allocs.begin(), e.allocs.end(), p) == e.allocs.end())
      e.frees.push_back(p);
  if (gr->mem_nodes) gr->exec = h;
  *out = h;
  return CUDA_SUCCESS;
}

Exec *find_exec(State &s, CUgraphExec h) {
  auto it = s.execs.find(h);
  return it == s.execs.end() ? nullptr : &it->second;
}

CUresult upload(CUgraphExec hExec, CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  Exec *e = find_exec(s, hExec);
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  return map_exec(s, *e);
}

CUresult launch(CUgraphExec hExec, CUstream hStream, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  Exec *e = find_exec(s, hExec);
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  CUresult err = CUDA_SUCCESS;
  if (capture_of(s, hStream, ptsz, &err)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // not simulated
  if (err) return err;
  const bool auto_free = e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
  for (CUdeviceptr p : e->allocs)  // "remain unfreed from a previous launch": refused, nothing done
    if (s.graph_allocs.at(p).state == GraphAllocState::Live && !auto_free) return CUDA_ERROR_INVALID_VALUE;
  for (CUdeviceptr p : e->allocs) {
    GraphAlloc &a = s.graph_allocs.at(p);
    if (a.state == GraphAllocState::Live) unmap(s, a);  // AUTO_FREE_ON_LAUNCH
  }
  if (CUresult r = map_exec(s, *e)) return r;
  // The graph runs (at once): its free nodes of other graphs' allocations free them, and its
  // allocations that it does not free itself become live.
  for (CUdeviceptr p : e->frees) {
    auto it = s.graph_allocs.find(p);
    if (it == s.graph_allocs.end() || it->second.state != GraphAllocState::Live) continue;
    unmap(s, it->second);
    maybe_erase(s, it);
  }
  for (CUdeviceptr p : e->allocs) {
    GraphAlloc &a = s.graph_allocs.at(p);
    if (!a.freed_in_owner) a.state = GraphAllocState::Live;
  }
  return CUDA_SUCCESS;
}

// A copy of `src` (no memory nodes: the callers refuse those), child graphs copied too.
CUgraph clone_graph(State &s, CUgraph src) {
  const CUgraph g = graph_create(s);
  std::map<CUgraphNode, CUgraphNode> copies;
  const std::vector<CUgraphNode> nodes = s.graphs[src].nodes;
  for (CUgraphNode n : nodes) {
    const Node old = s.nodes[n];
    std::vector<CUgraphNode> deps;
    for (CUgraphNode d : old.deps) deps.push_back(copies.at(d));  // a node's deps were added before it
    const CUgraphNode copy = add_node(s, g, old.type, deps.data(), deps.size());
    copies[n] = copy;
    if (old.type == CU_GRAPH_NODE_TYPE_GRAPH && old.child) {
      const CUgraph child = clone_graph(s, old.child);
      s.nodes[copy].child = child;
      s.graphs[child].owner = copy;
    }
  }
  return g;
}

CUresult add_child_node(State &s, CUgraph hGraph, const CUgraphNode *deps, size_t n, CUgraph child,
                        CUgraphChildGraphNodeOwnership ownership, CUgraphNode *out) {
  if (!out || !find_graph(s, hGraph) || child == hGraph) return CUDA_ERROR_INVALID_VALUE;
  Graph *c = find_graph(s, child);
  if (!c || c->capturing) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_deps(s, hGraph, deps, n)) return r;
  if (ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) {
    if (c->mem_nodes) return CUDA_ERROR_INVALID_VALUE;  // "If childGraph contains allocation nodes, free nodes..."
    const CUgraph copy = clone_graph(s, child);
    const CUgraphNode h = add_node(s, hGraph, CU_GRAPH_NODE_TYPE_GRAPH, deps, n);
    s.nodes[h].child = copy;
    s.graphs[copy].owner = h;
    *out = h;
    return CUDA_SUCCESS;
  }
  if (ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) return CUDA_ERROR_INVALID_VALUE;
  // Moved: not already a child, not instantiated, not one of the graphs embedding the parent.
  if (c->owner || c->exec) return CUDA_ERROR_INVALID_VALUE;
  for (CUgraph p = hGraph; p; p = parent_of(s, p))
    if (p == child) return CUDA_ERROR_INVALID_VALUE;
  if (c->mem_nodes && s.graphs[hGraph].owner) return CUDA_ERROR_INVALID_VALUE;  // no memory nodes into an embedded graph
  const CUgraphNode h = add_node(s, hGraph, CU_GRAPH_NODE_TYPE_GRAPH, deps, n);
  s.nodes[h].child = child;
  c->owner = h;
  c->moved = true;
  if (c->mem_nodes) {
    mark_mem_nodes(s, hGraph);
    // A free node of the parent's tree for an allocation moved in (or the other way round) now
    // frees inside its own graph.
    const CUgraph top = top_of(s, hGraph);
    for (auto &[p, a] : s.graph_allocs)
      if (a.freed_by && a.graph && top_of(s, a.graph) == top && top_of(s, a.freed_by) == top) {
        a.freed_by = nullptr;
        a.freed_in_owner = true;
      }
  }
  *out = h;
  return CUDA_SUCCESS;
}

CUresult add_node_generic(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *deps, size_t n,
                          CUgraphNodeParams *params) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phGraphNode || !params || !find_graph(s, hGraph)) return CUDA_ERROR_INVALID_VALUE;
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS p{};
      const CUDA_MEM_ALLOC_NODE_PARAMS_v2 &in = params->alloc;
      p.poolProps = in.poolProps;
      p.accessDescs = in.accessDescs;
      p.accessDescCount = in.accessDescCount;
      p.bytesize = in.bytesize;
      if (CUresult r = graph_add_alloc_node(s, hGraph, deps, n, &p, phGraphNode)) return r;
      params->alloc.dptr = p.dptr;
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return graph_add_free_node(s, hGraph, deps, n, params->free.dptr, phGraphNode);
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return add_child_node(s, hGraph, deps, n, params->graph.graph, params->graph.ownership, phGraphNode);
    default:  // kernels, copies, events, ...: no memory of their own
      if (CUresult r = check_deps(s, hGraph, deps, n)) return r;
      *phGraphNode = add_node(s, hGraph, params->type, deps, n);
      return CUDA_SUCCESS;
  }
}

}  // namespace

namespace fc {

CUgraph graph_create(State &s) {
  CUgraph h = new_handle_as<CUgraph>(s, 6);
  s.graphs[h];
  return h;
}

void graph_destroy(State &s, CUgraph g) {
  auto git = s.graphs.find(g);
  if (git == s.graphs.end()) return;
  const std::vector<CUgraphNode> nodes = git->second.nodes;
  for (CUgraphNode n : nodes) {
    const Node &node = s.nodes[n];
    if (node.type == CU_GRAPH_NODE_TYPE_GRAPH && node.child) {  // what the node embeds goes with it
      s.graphs[node.child].owner = nullptr;
      graph_destroy(s, node.child);
      s.nodes.erase(n);
      continue;
    }
    auto a = s.graph_allocs.find(node.dptr);
    if (node.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && a != s.graph_allocs.end()) {
      a->second.graph = nullptr;  // live memory stays until freed (the Guide: destruction frees nothing)
      a->second.node = nullptr;
      maybe_erase(s, a);
    } else if (node.type == CU_GRAPH_NODE_TYPE_MEM_FREE && a != s.graph_allocs.end() && a->second.freed_by == g) {
      a->second.freed_by = nullptr;
    }
    s.nodes.erase(n);
  }
  git = s.graphs.find(g);  // (the recursion may have rebalanced the map)
  if (git->second.exec) s.execs[git->second.exec].graph = nullptr;  // the executable graph lives on
  s.graphs.erase(git);
}

CUresult graph_add_alloc_node(State &s, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              CUDA_MEM_ALLOC_NODE_PARAMS *params, CUgraphNode *out) {
  if (!out || !params || !find_graph(s, g)) return CUDA_ERROR_INVALID_VALUE;
  if (s.graphs[g].owner) return CUDA_ERROR_INVALID_VALUE;  // an embedded graph takes no memory nodes
  if (CUresult r = alloc_params_ok(s, *params)) return r;
  if (CUresult r = check_deps(s, g, deps, ndeps)) return r;
  const Bytes phys = round_up(params->bytesize, kPage);
  CUdeviceptr va = s.va.alloc(phys, kPage);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
  CUgraphNode h = add_node(s, g, CU_GRAPH_NODE_TYPE_MEM_ALLOC, deps, ndeps);
  Node &node = s.nodes[h];
  node.dptr = va;
  node.alloc = *params;
  node.alloc.accessDescs = nullptr;  // not kept: the caller's array
  node.alloc.accessDescCount = 0;
  node.alloc.dptr = va;
  GraphAlloc &a = s.graph_allocs[va];
  a.size = params->bytesize;
  a.phys = phys;
  a.device = params->poolProps.location.id;
  a.graph = g;
  a.node = h;
  mark_mem_nodes(s, g);
  params->dptr = va;
  *out = h;
  return CUDA_SUCCESS;
}

CUresult graph_add_free_node(State &s, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUdeviceptr dptr,
                             CUgraphNode *out) {
  if (!out || !find_graph(s, g)) return CUDA_ERROR_INVALID_VALUE;
  if (s.graphs[g].owner) return CUDA_ERROR_INVALID_VALUE;  // an embedded graph takes no memory nodes
  if (CUresult r = check_deps(s, g, deps, ndeps)) return r;
  auto it = s.graph_allocs.find(dptr);  // "an address that was not returned by an allocation node"
  if (it == s.graph_allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  GraphAlloc &a = it->second;
  if (a.freed_in_owner || a.freed_by) return CUDA_ERROR_INVALID_VALUE;  // freed twice, or in two graphs
  if (a.graph && top_of(s, a.graph) == top_of(s, g)) a.freed_in_owner = true;  // its own graph, or one embedding it
  else a.freed_by = g;
  CUgraphNode h = add_node(s, g, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, ndeps);
  s.nodes[h].dptr = dptr;
  mark_mem_nodes(s, g);
  *out = h;
  return CUDA_SUCCESS;
}

bool graph_free_live(State &s, CUdeviceptr dptr, CUresult *result) {
  auto it = s.graph_allocs.find(dptr);
  if (it == s.graph_allocs.end()) return false;
  if (it->second.state != GraphAllocState::Live) {
    *result = CUDA_ERROR_INVALID_VALUE;  // not allocated (yet, or any more), or freed in its graph
    return true;
  }
  unmap(s, it->second);
  maybe_erase(s, it);
  *result = CUDA_SUCCESS;
  return true;
}

bool graph_address_range(State &s, CUdeviceptr dptr, CUdeviceptr *base, Bytes *size) {
  auto it = s.graph_allocs.upper_bound(dptr);
  if (it == s.graph_allocs.begin()) return false;
  --it;
  const GraphAlloc &a = it->second;
  // Only while allocated: mapped to an executable graph between launches is not allocated.
  if (dptr >= it->first + a.size || a.state != GraphAllocState::Live) return false;
  *base = it->first;
  *size = a.size;
  return true;
}

}  // namespace fc

FC_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phGraph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = graph_create(s);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphDestroy(CUgraph hGraph) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Graph *g = find_graph(s, hGraph);
  if (!g || g->capturing) return CUDA_ERROR_INVALID_VALUE;
  if (g->owner) return CUDA_ERROR_INVALID_VALUE;  // its child graph node owns it
  graph_destroy(s, hGraph);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                       size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return graph_add_alloc_node(s, hGraph, dependencies, numDependencies, nodeParams, phGraphNode);
}

FC_API CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                      size_t numDependencies, CUdeviceptr dptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return graph_add_free_node(s, hGraph, dependencies, numDependencies, dptr, phGraphNode);
}

FC_API CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUgraphNodeParams *nodeParams) {
  return add_node_generic(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

FC_API CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                  CUgraphNodeParams *nodeParams) {
  return add_node_generic(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);  // edge data: default
}

FC_API CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                    size_t numDependencies) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!phGraphNode || !find_graph(s, hGraph)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_deps(s, hGraph, dependencies, numDependencies)) return r;
  *phGraphNode = add_node(s, hGraph, CU_GRAPH_NODE_TYPE_EMPTY, dependencies, numDependencies);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                         size_t numDependencies, CUgraph childGraph) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  return add_child_node(s, hGraph, dependencies, numDependencies, childGraph, CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE,
                        phGraphNode);
}

FC_API CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.nodes.find(hNode);
  if (it == s.nodes.end() || it->second.type != CU_GRAPH_NODE_TYPE_GRAPH || !phGraph) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = it->second.child;  // not a copy: the node keeps it
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.nodes.find(hNode);
  if (it == s.nodes.end()) return CUDA_ERROR_INVALID_VALUE;
  Graph &g = s.graphs[it->second.graph];
  if (g.mem_nodes) return CUDA_ERROR_NOT_SUPPORTED;  // "Nodes and edges of the graph cannot be deleted"
  g.nodes.erase(std::find(g.nodes.begin(), g.nodes.end(), hNode));
  if (it->second.type == CU_GRAPH_NODE_TYPE_GRAPH && it->second.child) {
    s.graphs[it->second.child].owner = nullptr;
    graph_destroy(s, it->second.child);
  }
  for (CUgraphNode other : g.nodes) {
    auto &deps = s.nodes[other].deps;
    deps.erase(std::remove(deps.begin(), deps.end(), hNode), deps.end());
  }
  s.nodes.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Graph *g = find_graph(s, hGraph);
  if (!g || !numNodes) return CUDA_ERROR_INVALID_VALUE;
  if (nodes) {
    const size_t n = std::min(*numNodes, g->nodes.size());
    std::copy(g->nodes.begin(), g->nodes.begin() + static_cast<long>(n), nodes);
    for (size_t i = n; i < *numNodes; ++i) nodes[i] = nullptr;
  }
  *numNodes = g->nodes.size();
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.nodes.find(hNode);
  if (it == s.nodes.end() || !type) return CUDA_ERROR_INVALID_VALUE;
  *type = it->second.type;
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.nodes.find(hNode);
  if (it == s.nodes.end() || it->second.type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || !params_out)
    return CUDA_ERROR_INVALID_VALUE;
  *params_out = it->second.alloc;
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.nodes.find(hNode);
  if (it == s.nodes.end() || it->second.type != CU_GRAPH_NODE_TYPE_MEM_FREE || !dptr_out)
    return CUDA_ERROR_INVALID_VALUE;
  *dptr_out = it->second.dptr;
  return CUDA_SUCCESS;
}

FC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) return CUDA_ERROR_INVALID_VALUE;  // WithParams only
  return instantiate(s, phGraphExec, hGraph, flags);
}

// CUDA 10.0 / 11.0 ABI: an error node and a log buffer instead of flags.
static CUresult instantiate_v1(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize) {
  if (phErrorNode) *phErrorNode = nullptr;
  if (logBuffer && bufferSize) logBuffer[0] = '\0';
  return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}
FC_API CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                   char *logBuffer, size_t bufferSize) {
  return instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
FC_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                      char *logBuffer, size_t bufferSize) {
  return instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

static CUresult instantiate_with_params(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  p->hErrNode_out = nullptr;
  CUresult r;
  {
    State &s = state();
    std::lock_guard<DriverMutex> lock(s.mu);
    r = require_init(s);
    if (!r) r = instantiate(s, phGraphExec, hGraph, p->flags);
  }
  if (!r && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
    r = upload(*phGraphExec, p->hUploadStream);
    if (r) cuGraphExecDestroy(*phGraphExec);
  }
  p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
  return r;
}
FC_API CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
  return instantiate_with_params(phGraphExec, hGraph, instantiateParams);
}
FC_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
  return instantiate_with_params(phGraphExec, hGraph, instantiateParams);
}

FC_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) { return upload(hGraphExec, hStream); }
FC_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) { return upload(hGraphExec, hStream); }
FC_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) { return launch(hGraphExec, hStream, false); }
FC_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return launch(hGraphExec, hStream, true);
}

FC_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.execs.find(hGraphExec);
  if (it == s.execs.end()) return CUDA_ERROR_INVALID_VALUE;
  for (CUdeviceptr p : it->second.allocs) {
    auto a = s.graph_allocs.find(p);
    if (a->second.state == GraphAllocState::Bound) unmap(s, a->second);  // live ones stay
    a->second.exec = nullptr;
    maybe_erase(s, a);
  }
  if (it->second.graph) s.graphs[it->second.graph].exec = nullptr;
  s.execs.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGraphMemTrim(CUdevice device) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, device)) return r;
  // Nothing is executing: everything but live allocations goes back to the device.
  for (auto it = s.graph_allocs.begin(); it != s.graph_allocs.end();) {
    auto next = std::next(it);
    if (it->second.device == device && it->second.state == GraphAllocState::Bound) {
      unmap(s, it->second);
      maybe_erase(s, it);
    }
    it = next;
  }
  GraphMemory &m = s.devices[device].graph;
  uncharge(s.devices[device], m.reserved - m.used);
  m.reserved = m.used;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, device)) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const GraphMemory &m = s.devices[device].graph;
  cuuint64_t *out = static_cast<cuuint64_t *>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *out = m.used; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *out = m.used_high; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *out = m.reserved; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *out = m.reserved_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, device)) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  GraphMemory &m = s.devices[device].graph;
  // "High watermark can only be reset to zero": the watermark restarts from the current value.
  if (*static_cast<const cuuint64_t *>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: m.used_high = m.used; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: m.reserved_high = m.reserved; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
