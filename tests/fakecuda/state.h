// state.h — the simulated driver's process-wide state: devices and their physical
// accounting, contexts, and every live object (allocations, pools, VMM handles and
// reservations, arrays, streams, IPC imports), each tagged with the context that made it.
// One mutex guards all of it; the calling thread's context stack is thread_local.
#pragma once

#include <atomic>

#include "addrspace.h"
#include "fc_api.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <signal.h>
#include <vector>

namespace fc {

using Bytes = uint64_t;

constexpr Bytes kAllocRound = 512;           // cuMemAlloc / pool block rounding and alignment
constexpr Bytes kGranularity = 2ull << 20;   // VMM granularity (minimum and recommended)

inline Bytes round_up(Bytes v, Bytes a) { return (v + a - 1) / a * a; }

struct Ctx {
  int device = 0;
  bool primary = false;
  bool alive = false;   // false after cuCtxDestroy, or while a primary context is inactive
  unsigned flags = 0;
};

struct Device {
  Bytes total = 0, foreign = 0, used = 0;
  CUcontext primary = nullptr;
  int primary_refs = 0;
  unsigned primary_flags = 0;
  CUmemoryPool default_pool = nullptr, current_pool = nullptr;
};

enum class Kind { Device, Managed, PoolBlock, IpcImport };

// Everything cuMemGetAddressRange can answer for, keyed by base address.
struct Alloc {
  Kind kind = Kind::Device;
  Bytes size = 0;        // what the caller asked for (pitch * height for pitched)
  Bytes charged = 0;     // bytes counted in Device::used (0 if not resident)
  Bytes va_size = 0;     // bytes taken from the address space (0: host mapping)
  int device = 0;
  CUcontext ctx = nullptr;
  CUmemoryPool pool = nullptr;  // PoolBlock: owning pool
  int ipc_refs = 0;             // IpcImport: opens in this context
  uint64_t ipc_key = 0;         // IpcImport: exporter address and pid (with ctx: reopen key)
  uint64_t ipc_pid = 0;
};

struct Pool {
  int device = -1;        // -1: host location, not counted against a device
  bool is_default = false;
  bool destroyed = false; // cuMemPoolDestroy'd with blocks still in use
  Bytes max_size = 0;     // 0: unlimited
  Bytes release_threshold = 0;
  int reuse[3] = {1, 1, 1};
  Bytes reserved = 0, used = 0, reserved_high = 0, used_high = 0;
  size_t blocks_in_use = 0;
  std::map<Bytes, std::vector<CUdeviceptr>> free_blocks;  // block size -> addresses (LIFO)
};

struct PhysHandle {           // cuMemCreate
  Bytes size = 0;
  int device = -1;            // -1: host / host NUMA location
  CUcontext ctx = nullptr;
  bool released = false;      // cuMemRelease called; freed once `mappings` reaches 0
  int mappings = 0;
};

struct Mapping {
  Bytes size = 0, offset = 0;
  CUmemGenericAllocationHandle handle = 0;
};

struct Reservation {          // cuMemAddressReserve
  Bytes size = 0;
  CUcontext ctx = nullptr;
  std::map<CUdeviceptr, Mapping> mappings;
};

struct Array {
  int device = 0;
  Bytes charged = 0;
  CUcontext ctx = nullptr;
};

struct Stream {
  CUcontext ctx = nullptr;
};

struct HostBlock {            // cuMemHostAlloc / cuMemAllocHost (ours) or cuMemHostRegister (theirs)
  Bytes size = 0;
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

struct State {
  DriverMutex mu;
  std::atomic<bool> initialized{false};  // read without the lock by cuCtxGetCurrent
  std::vector<Device> devices;
  std::map<CUcontext, Ctx> ctxs;      // never erased: stale handles stay recognisable
  AddressSpace va;
  std::map<CUdeviceptr, Alloc> allocs;
  std::map<CUmemoryPool, Pool> pools;
  std::map<CUmemGenericAllocationHandle, PhysHandle> phys;
  std::map<CUdeviceptr, Reservation> reservations;
  std::map<CUarray, Array> arrays;
  std::map<CUstream, Stream> streams;
  std::map<void *, HostBlock> host_allocs;
  std::map<uintptr_t, HostBlock> host_registered;
  uint64_t next_id = 1;               // source of opaque handle values
};

// The one state object. Created on first use and never destroyed (see config.h).
State &state();

// An opaque handle value: looks like a pointer, is never dereferenced, never reused.
// `kind` separates the handle families so a handle of one kind never matches another.
uint64_t new_handle(State &s, unsigned kind);

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
// Frees a Kind::Device or Kind::Managed allocation (api_memory.cpp).
void free_plain_alloc(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Gives an in-use pool block back to its pool (api_pool.cpp).
void pool_return_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it);
// Releases free blocks of every pool on `device` above its release threshold (api_pool.cpp).
void pool_sync_device(State &s, int device);
// Releases free blocks of every pool on `device` (primary context reset; api_pool.cpp).
void pool_trim_device(State &s, int device);
// The device a stream handle (0, CU_STREAM_LEGACY/PER_THREAD or created) works on (api_stream.cpp).
CUresult stream_ctx(State &s, CUstream stream, CUcontext *ctx);

// The thread's context stack (top = current). Only the owning thread touches it.
std::vector<CUcontext> &ctx_stack();

}  // namespace fc
