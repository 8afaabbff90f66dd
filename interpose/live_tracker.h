// What is live right now, inside the traced process: bytes per device and bucket, the peak per
// device, and bytes per call site. Fed by the recorder with every event it writes; read by the
// public API (include/vramtrace.h: the pytest plugin's limits) and the shared-memory summary that
// `vramtrace top` shows. The accounting rules are the analyzer's (format/accounting.h), so a live
// figure equals the report's for the same events (tests/unit/accounting_test.cpp replays the
// same sequences through both and compares every figure).
//
// What track_event takes (on the hook path, after the real call returned and after the event
// was encoded; never while unwinding, never two at once, none held across a system call except
// the rare mmap that grows a table):
//   - address-keyed allocations and frees (cuMemAlloc, cuMemFree, the stream-ordered, host,
//     managed, array and IPC calls): no lock. The traced program's frees carry only an address,
//     so the size and place of every live allocation are kept in a lock-free map
//     (live_table.h), which blocks only while one thread grows it (rare: the table doubles).
//   - cuMemAllocFromPoolAsync: additionally reads the pool table without a lock.
//   - cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap: the VMM spinlock (mappings and the handles'
//     release state), released before the handle map is touched.
//   - cuMemPoolCreate, cuMemPoolDestroy: the pool table's spinlock.
//   - a context teardown: none (the map's live entries of that context are taken out one by one).
//   - reservations, trims, lookups, graph nodes and graph pool samples: none (atomics).
// Shared cache lines written per event: once a second thread allocates, none for the byte counts
// (each thread adds to its own counters, live_counters.h, and the peak becomes a figure sampled
// at each query until vramtrace_reset_peak() asks for an exact one); the call site's counter
// when the event has a stack.
// Counters are atomics (relaxed). Memory comes from mmap, never malloc: the hook may run inside
// the program's malloc.
#pragma once

#include <cstdint>

#include "accounting.h"
#include "event.h"
#include "shm_layout.h"

namespace vt {

using format::kTrackedDevices;  // devices 0..15 apart (shm_layout.h); the others (and -1) share a row
inline constexpr int kLiveDevice = int(Bucket::Device);

// Applies an event (a failed one changes nothing: rule 1).
void track_event(const Event& e);

int64_t live_bytes(int device, int bucket);  // device -1: all devices; a device >= kTrackedDevices: the shared row
int64_t peak_bytes(int device);              // device bucket; -1: the highest row (live_counters.h: exact or sampled)
void reset_peak(int device);     // -1: every device; from then on the peak is exact (live_counters.h)

// Live device bytes of stack id `stack`, all devices (ids above the table size share slot 0).
int64_t site_bytes(uint32_t stack);
inline constexpr uint32_t kTrackedStacks = 1u << 16;

// Pools created in the trace that the tracker places (by their location) at once, live at the
// same time; allocations from pools beyond count on their event's device (the analyzer has no
// such limit: the figures then differ).
inline constexpr int kTrackedPools = 256;

// The device pools created or named in this run that live on `device` (at most `max`): the
// pools whose figures an allocation failure reads (pool_usage.h). Lock-free.
int tracked_device_pools(int32_t device, uint64_t* out, int max);

void forget_live_state();  // after fork: the child starts with nothing live

}  // namespace vt
