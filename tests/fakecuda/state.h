// state.h — the simulated driver's process-wide state: devices and their physical
// accounting, contexts, and every live object (allocations, pools, VMM handles and
// reservations, multicast objects, arrays, streams and their captures, events, graphs,
// modules, external memory, IPC imports), each tagged with the context that made it.
// One mutex guards all of it; the calling thread's context stack is thread_local.
#pragma once

#include <atomic>

#include "addrspace.h"
#include "fc_api.h"
#include "page_heap.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <signal.h>
#include <string>
#include <tuple>
#include <vector>

namespace fc {

using Bytes = uint64_t;

constexpr Bytes kAllocRound = 512;           // cuMemAlloc / pool block rounding and alignment
constexpr Bytes kPage = PageHeap::kPage;     // device memory moves in 2 MiB pages
constexpr Bytes kGranularity = 2ull << 20;   // VMM granularity (minimum and recommended)
constexpr Bytes kMulticastMinimum = 2ull << 20;
constexpr Bytes kMulticastRecommended = 512ull << 20;

inline Bytes round_up(Bytes v, Bytes a) { return (v + a - 1) / a * a; }

// CUlimit values a context starts with (cuCtxGetLimit on an H200, CUDA 13 defaults).
constexpr size_t kDefaultStack = 1024, kDefaultPrintfFifo = 1u << 20, kDefaultMallocHeap = 8u << 20;
constexpr int kLimits = 10;

struct Ctx {
  int device = 0;
  bool primary = false;
  bool alive = false;   // false after cuCtxDestroy, or while a primary context is inactive
  unsigned flags = 0;
  Bytes charged = 0;    // what the context itself costs its device while alive
  CUgreenCtx green = nullptr;  // the green context this is the CUcontext of
  size_t limits[kLimits] = {kDefaultStack, kDefaultPrintfFifo, kDefaultMallocHeap, 2, 2048, 0, 0, 0, 0, 1};
};

struct GraphMemory {  // the graph allocator's pool of one device (cuDeviceGetGraphMemAttribute)
  Bytes reserved = 0, used = 0, reserved_high = 0, used_high = 0;
};

struct Device {
  Bytes total = 0, foreign = 0, used = 0;
  CUcontext primary = nullptr;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  PageHeap heap;        // cuMemAlloc, cuMemAllocPitch, arrays
  GraphMemory graph;
};

enum class Kind {
  Device,       // cuMemAlloc / cuMemAllocPitch (device heap)
  Managed,      // cuMemAllocManaged (host mapping, not counted)
  PoolBlock,    // cuMemAllocAsync / cuMemAllocFromPoolAsync
  IpcImport,    // cuIpcOpenMemHandle: another allocation's memory, not counted
  PoolImport,   // cuMemPoolImportPointer: another process's pool block, not counted
  ExternalBuffer,  // cuExternalMemoryGetMappedBuffer: memory of another API, not counted
};

// Everything cuMemGetAddressRange can answer for, keyed by base address.
struct Alloc {
  Kind kind = Kind::Device;
  Bytes size = 0;        // what the caller asked for (pitch * height for pitched)
  Bytes block = 0;       // PoolBlock: its range in the pool, the size rounded to 512 B (what USED counts)
  Bytes va_size = 0;     // bytes taken from the address space outside any heap (0: none)
  int device = 0;
  CUcontext ctx = nullptr;
  CUmemoryPool pool = nullptr;  // PoolBlock: owning pool; PoolImport: the imported pool
  int import_refs = 0;          // IpcImport / PoolImport: opens in this context
  uint64_t import_key = 0;      // IpcImport / PoolImport: exporter address and pid
  uint64_t import_pid = 0;
};

struct Pool {
  int device = -1;        // the device whose memory it holds; -1: host or managed memory
  CUmemAllocationType alloc_type = CU_MEM_ALLOCATION_TYPE_PINNED;
  CUmemLocation location{};
  CUmemAllocationHandleType handle_types = CU_MEM_HANDLE_TYPE_NONE;
  bool is_default = false;
  bool destroyed = false; // cuMemPoolDestroy'd with blocks still in use
  bool imported = false;  // cuMemPoolImportFromShareableHandle: no allocations from it
  uint64_t export_pid = 0, export_pool = 0;  // imported: the exporter's pid and pool handle
  Bytes max_size = 0;     // 0: unlimited
  Bytes release_threshold = 0;
  int reuse[3] = {1, 1, 1};
  Bytes used = 0, reserved_high = 0, used_high = 0;
  Bytes host_reserved = 0; // host/managed pools: bytes of their chunks (no pages)
  size_t blocks_in_use = 0;
  PageHeap heap;           // device pools: the pages of their chunks (each chunk whole pages)
  // Memory the pool reserved, in chunks of whole 2 MiB pages, split between its allocations
  // (api_pool.cpp): each chunk's free ranges, coalesced, and all of them by (length, address)
  // for the best fit.
  struct Chunk {
    Bytes size = 0;
    size_t live = 0;                      // allocations in it
    std::map<Bytes, Bytes> free_runs;     // offset -> length, disjoint, never adjacent
  };
  std::map<CUdeviceptr, Chunk> chunks;    // base address -> chunk
  std::set<std::pair<Bytes, CUdeviceptr>> free_ranges;
  Bytes reserved() const { return device >= 0 ? heap.charged() : host_reserved; }
};

// The header of a shareable handle: a one-page memfd whose descriptor is the POSIX fd handle
// (cuMemExportToShareableHandle, cuMemPoolExportToShareableHandle). Every process of the
// simulation that receives the fd maps the same page, so an import in another process can
// say "I hold it" (importers) and multicast teams can count their devices across processes.
struct SharedObject {
  char magic[8];
  uint32_t kind;          // 1 physical memory, 2 multicast object, 3 memory pool
  int32_t pid;            // the exporter
  uint64_t id;            // the exporter's handle value
  uint64_t size;
  int32_t device;         // physical memory / pool: its device; -1 host
  uint32_t num_devices;   // multicast: team size
  CUmemAllocationProp prop;
  std::atomic<int32_t> importers;   // processes other than the exporter holding it
  std::atomic<int32_t> devices_added;  // multicast: cuMulticastAddDevice calls, all processes
};

struct Export {               // a shareable fd this process handed out
  int fd = -1;
  uint64_t dev = 0, ino = 0;  // what it referred to (the fd number may be reused)
};

struct Phys {                 // a physical allocation (cuMemCreate, or an imported one)
  Bytes size = 0;
  int device = -1;            // -1: host / host NUMA location
  bool charged = false;       // counted on `device` (false for another process's memory)
  CUcontext ctx = nullptr;
  CUmemAllocationProp prop{};
  int handles = 0;            // live handle values referring to it
  int mappings = 0;           // cuMemMap ranges
  int binds = 0;              // multicast bindings
  std::vector<Export> exports;
  SharedObject *shared = nullptr;  // the exported or imported header (mmap), or null
  int shared_fd = -1;         // the exporter's own descriptor of the header (re-exports dup it)
  bool remote = false;        // an import of another process's memory
};

struct Binding {              // multicast: memory bound at an offset, per device
  uint64_t phys = 0;
  Bytes mem_offset = 0, size = 0;
};

struct Multicast {            // cuMulticastCreate
  Bytes size = 0;
  unsigned num_devices = 0;
  CUmemAllocationHandleType handle_types = CU_MEM_HANDLE_TYPE_NONE;
  std::set<int> devices;      // added in this process
  int handles = 0, mappings = 0;
  std::map<std::pair<int, Bytes>, Binding> binds;  // (device, mc offset)
  std::vector<Export> exports;
  SharedObject *shared = nullptr;
  int shared_fd = -1;
  bool remote = false;
  CUcontext ctx = nullptr;
};

struct Handle {               // a CUmemGenericAllocationHandle value
  uint64_t object = 0;        // key in State::phys or State::multicasts
  bool multicast = false;
  int refs = 0;               // cuMemCreate/import = 1, each cuMemRetainAllocationHandle + 1
};

struct Mapping {
  Bytes size = 0, offset = 0;
  CUmemGenericAllocationHandle handle = 0;  // the handle value it was mapped with
  uint64_t object = 0;
  bool multicast = false;
};

struct Reservation {          // cuMemAddressReserve
  Bytes size = 0;
  CUcontext ctx = nullptr;
  std::map<CUdeviceptr, Mapping> mappings;
};

struct Array {
  int device = 0;
  CUdeviceptr va = 0;           // its place in the device heap (0: counted nowhere)
  CUcontext ctx = nullptr;
  CUmipmappedArray level_of = nullptr;  // a level of a mipmapped array (not destroyable alone)
};

struct MipmappedArray {
  int device = 0;
  CUdeviceptr va = 0;           // 0: mapped from external memory, counted nowhere
  CUcontext ctx = nullptr;
  std::vector<CUarray> levels;
};

struct ExternalMemory {
  Bytes size = 0;
  int fd = -1;                  // owned by the driver once imported
  CUcontext ctx = nullptr;
};

// A stream capture sequence (cuStreamBeginCapture*).
struct Capture {
  bool active = false, invalidated = false;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUgraph graph = nullptr;
  bool user_graph = false;      // cuStreamBeginCaptureToGraph: the caller owns the graph
  uint64_t id = 0;
  uint64_t thread = 0;          // the thread that began it
  std::vector<CUgraphNode> deps;  // the capture's current dependency set (its last node)
};

struct Stream {
  CUcontext ctx = nullptr;
  unsigned flags = 0;
  Capture capture;
};

struct Event {
  CUcontext ctx = nullptr;
  int device = -1;              // device of the last record (-1: never recorded)
};

// Graphs (api_graph.cpp). A graph allocation's VA is fixed when its node is made; its
// physical memory comes from the device's graph pool when an executable graph maps it.
enum class GraphAllocState { Unmapped, Bound, Live };
struct GraphAlloc {
  Bytes size = 0, phys = 0;     // requested; physical (2 MiB pages)
  int device = 0;
  CUgraph graph = nullptr;      // the owning graph (null once destroyed)
  CUgraphNode node = nullptr;
  bool freed_in_owner = false;  // a free node in the owning graph
  CUgraph freed_by = nullptr;   // a free node in another graph
  CUgraphExec exec = nullptr;   // the executable graph of the owner, if instantiated
  GraphAllocState state = GraphAllocState::Unmapped;
};

struct Node {
  CUgraph graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUdeviceptr dptr = 0;         // MEM_ALLOC / MEM_FREE
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  std::vector<CUgraphNode> deps;
  CUgraph child = nullptr;      // CU_GRAPH_NODE_TYPE_GRAPH: the embedded graph, owned by the node
};

struct Graph {
  std::vector<CUgraphNode> nodes;
  bool mem_nodes = false;
  CUgraphExec exec = nullptr;   // graphs with memory nodes: at most one instantiation
  bool capturing = false;       // the graph of a capture still in progress
  CUgraphNode owner = nullptr;  // the child graph node embedding it (a clone, or moved in)
  bool moved = false;           // moved in (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE): its own memory nodes
};

struct Exec {
  CUgraph graph = nullptr;      // null once the graph is destroyed
  std::vector<CUdeviceptr> allocs;  // allocation nodes, instantiation order
  std::vector<CUdeviceptr> frees;   // free nodes of other graphs' allocations
  unsigned long long flags = 0;
  CUcontext ctx = nullptr;
};

struct Module {
  CUcontext ctx = nullptr;
  Bytes charged = 0;
  CUlibrary library = nullptr;  // loaded on behalf of a library
};

struct Library {
  bool lazy = true;             // CUDA_MODULE_LOADING=LAZY (the default)
  std::map<CUcontext, CUmodule> modules;  // where it is loaded
};

struct HostBlock {            // cuMemHostAlloc / cuMemAllocHost (ours) or cuMemHostRegister (theirs)
  Bytes size = 0;
  CUcontext ctx = nullptr;
};

struct GreenCtx {
  CUcontext ctx = nullptr;
};

// The state lock. With FAKECUDA_SIGNAL_SAFE=1 it blocks asynchronous signals while it is held,
// so a signal handler that calls the driver never finds the lock held by the very thread it
// interrupted (the real driver promises nothing of the kind; tests that make CUDA calls from
// signal handlers need it).
class DriverMutex {
 public:
  void lock();
  void unlock();

 private:
  std::mutex mu_;
  sigset_t saved_;
};

// FAKECUDA_RAISE=<entry point>:<n>: every n-th call of that entry point raises SIGUSR1 on the
// calling thread before doing anything else (a signal arriving at a known moment).
void maybe_raise(const char *entry_point);

// Pools by (allocation type, location type, location id): the default and the current one.
struct PoolSlot {
  CUmemoryPool default_pool = nullptr, current = nullptr;
};
using PoolKey = std::tuple<int, int, int>;

struct State {
  DriverMutex mu;
  std::atomic<bool> initialized{false};  // read without the lock by cuCtxGetCurrent
  std::vector<Device> devices;
  std::map<CUcontext, Ctx> ctxs;      // never erased: stale handles stay recognisable
  AddressSpace va;
  std::map<CUdeviceptr, Alloc> allocs;
  std::map<CUmemoryPool, Pool> pools;
  std::map<PoolKey, PoolSlot> pool_slots;
  std::map<uint64_t, Phys> phys;
  std::map<uint64_t, Multicast> multicasts;
  std::map<CUmemGenericAllocationHandle, Handle> handles;
  std::map<CUdeviceptr, Reservation> reservations;
  std::map<CUarray, Array> arrays;
  std::map<CUmipmappedArray, MipmappedArray> mipmapped;
  std::map<CUexternalMemory, ExternalMemory> external;
  std::map<CUstream, Stream> streams;
  std::map<uint64_t, Stream> thread_streams;  // CU_STREAM_PER_THREAD, by thread
  std::map<CUevent, Event> events;
  std::map<CUgraph, Graph> graphs;
  std::map<CUgraphNode, Node> nodes;
  std::map<CUgraphExec, Exec> execs;
  std::map<CUdeviceptr, GraphAlloc> graph_allocs;
  std::map<CUmodule, Module> modules;
  std::map<CUlibrary, Library> libraries;
  std::map<CUgreenCtx, GreenCtx> green_ctxs;
  std::map<void *, HostBlock> host_allocs;
  std::map<uintptr_t, HostBlock> host_registered;
  uint64_t next_id = 1;               // source of opaque handle values
  uint64_t next_capture_id = 1;
};

// The one state object. Created on first use and never destroyed (see config.h).
State &state();

// An opaque handle value: looks like a pointer, is never dereferenced, never reused.
// `kind` separates the handle families so a handle of one kind never matches another.
uint64_t new_handle(State &s, unsigned kind);
template <typename T>
T new_handle_as(State &s, unsigned kind) {
  return reinterpret_cast<T>(new_handle(s, kind));
}

// The calling thread's identity for capture rules.
uint64_t thread_id();

// ---- calls below expect s.mu held ----

CUresult require_init(const State &s);
// The calling thread's current context, alive. INVALID_CONTEXT if none is current,
// CONTEXT_IS_DESTROYED if the current one was destroyed.
CUresult current_ctx(State &s, CUcontext *out);
// A context handle given by the caller: INVALID_CONTEXT unless known and alive.
CUresult lookup_ctx(State &s, CUcontext ctx);
CUresult check_device(const State &s, CUdevice dev);

// Physical accounting: OUT_OF_MEMORY (and nothing changed) if it does not fit.
CUresult charge(Device &d, Bytes n);
void uncharge(Device &d, Bytes n);

// Frees everything `ctx` owns, as cuCtxDestroy / a primary context reset does.
void release_ctx_resources(State &s, CUcontext ctx);

// Hooks of the files that own each object kind (called with s.mu held).
void memory_release_ctx(State &s, CUcontext ctx);      // api_memory.cpp
void host_release_ctx(State &s, CUcontext ctx);        // api_host.cpp
void pool_release_ctx(State &s, CUcontext ctx);        // api_pool.cpp
void vmm_release_ctx(State &s, CUcontext ctx);         // api_vmm.cpp
void array_release_ctx(State &s, CUcontext ctx);       // api_array.cpp
void ipc_release_ctx(State &s, CUcontext ctx);         // api_ipc.cpp
void stream_release_ctx(State &s, CUcontext ctx);      // api_stream.cpp
void module_release_ctx(State &s, CUcontext ctx);      // api_module.cpp
void external_release_ctx(State &s, CUcontext ctx);    // api_external.cpp
// Frees a Kind::Device or Kind::Managed allocation (api_memory.cpp).
void free_plain_alloc(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Frees whatever cuMemFree / cuMemFreeAsync may free (api_memory.cpp).
CUresult free_any(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Drops one open of a cuMemPoolImportPointer import (api_pool_ipc.cpp).
void pool_close_import(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Gives an in-use pool block back to its pool (api_pool.cpp).
void pool_return_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Releases free blocks of every pool on `device` above its release threshold (api_pool.cpp).
void pool_sync_device(State &s, int device);
// Releases free blocks of every pool on `device` (primary context reset; api_pool.cpp).
void pool_trim_device(State &s, int device);
// The current pool for a location and allocation type, creating the default one on first
// use; null for a location that has none (api_pool.cpp).
CUmemoryPool pool_current(State &s, CUmemAllocationType type, const CUmemLocation &loc);
// The context a stream handle (0, CU_STREAM_LEGACY/PER_THREAD or created) works on
// (api_stream.cpp).
CUresult stream_ctx(State &s, CUstream stream, CUcontext *ctx);
// The stream record of a created stream or the calling thread's per-thread default stream;
// null for the legacy stream. `ptsz`: the caller came through a per-thread-default-stream
// export, where 0 means CU_STREAM_PER_THREAD (api_stream.cpp).
Stream *stream_record(State &s, CUstream stream, bool ptsz);
// The capture a stream operation on `stream` joins, or null. An operation on the legacy
// stream while a blocking stream of its context captures is refused with
// STREAM_CAPTURE_IMPLICIT in `err` and invalidates that capture (api_capture.cpp).
Capture *capture_of(State &s, CUstream stream, bool ptsz, CUresult *err);
// An operation that may not run while captures are under way (cuMemAlloc, cuMemFree, ...):
// STREAM_CAPTURE_UNSUPPORTED, invalidating the captures it violates, or SUCCESS.
CUresult check_unsafe_call(State &s);
// Appends a node to a capture's graph after its current dependencies (api_capture.cpp).
void capture_add(State &s, Capture &c, CUgraphNode node);
// Graph allocations (api_graph.cpp).
CUresult graph_add_alloc_node(State &s, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                              CUDA_MEM_ALLOC_NODE_PARAMS *params, CUgraphNode *out);
CUresult graph_add_free_node(State &s, CUgraph g, const CUgraphNode *deps, size_t ndeps, CUdeviceptr dptr,
                             CUgraphNode *out);
CUgraph graph_create(State &s);
void graph_destroy(State &s, CUgraph g);
// cuMemFree / cuMemFreeAsync of a live graph allocation: true if `dptr` was one.
bool graph_free_live(State &s, CUdeviceptr dptr, CUresult *result);
// cuMemGetAddressRange over graph allocations.
bool graph_address_range(State &s, CUdeviceptr dptr, CUdeviceptr *base, Bytes *size);
// A mipmapped array; `counted`: takes device memory (false: mapped from external memory).
CUresult mipmapped_create(State &s, CUcontext ctx, const CUDA_ARRAY3D_DESCRIPTOR &desc, unsigned levels,
                          bool counted, CUmipmappedArray *out);  // api_array.cpp
// Reaps physical memory whose last reference another process dropped (api_vmm.cpp).
void vmm_reap(State &s);
// VMM objects (api_vmm.cpp, api_multicast.cpp): free when nothing refers to them any more.
void phys_maybe_free(State &s, uint64_t id);
void multicast_maybe_free(State &s, uint64_t id);
void multicast_reap(State &s);
void drop_mapping(State &s, const Mapping &m);
// The VMM mapping containing `ptr` (and its base), or null.
const Mapping *mapping_at(State &s, CUdeviceptr ptr, CUdeviceptr *base);
CUresult multicast_export(State &s, uint64_t id, int *fd);
CUresult multicast_import(State &s, SharedObject *o, CUmemGenericAllocationHandle *handle);
// Waits (the lock released, at most 10 s) until every device of the team has been added, as
// the driver blocks in cuMemMap and the bind calls; NOT_READY when they never are.
CUresult multicast_wait_team(State &s, std::unique_lock<DriverMutex> &lock, uint64_t id);

// The thread's context stack (top = current). Only the owning thread touches it.
std::vector<CUcontext> &ctx_stack();

}  // namespace fc
