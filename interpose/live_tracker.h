// What is live right now, inside the traced process: bytes per device and bucket, the peak per
// device, and bytes per call site. Fed by the recorder with every successful event; read by the
// public API (include/vramtrace.h: the pytest plugin's limits) and the shared-memory summary that
// `vramtrace top` shows. The accounting rules are the analyzer's (format/accounting.h), so a live
// figure equals the report's for the same events (tests/unit/accounting_test.cpp).
//
// Locks on the hook path: the traced program's frees carry only an address, so the size of every
// live allocation is kept in a sharded hash map, each shard under a short spinlock (never held
// while unwinding or writing the trace). Pools are looked up without a lock; VMM calls (mapping
// state) take one spinlock of their own, then a shard's. Memory comes from mmap, never malloc.
#pragma once

#include <cstdint>

#include "accounting.h"
#include "event.h"

namespace vt {

inline constexpr int kTrackedDevices = 16;  // devices 0..15 apart; the others (and -1) share a row
inline constexpr int kLiveDevice = int(Bucket::Device);

// Applies an event (a failed one changes nothing).
void track_event(const Event& e);

int64_t live_bytes(int device, int bucket);  // device -1: all devices
int64_t peak_bytes(int device);              // device bucket; -1: the highest device
void reset_peak(int device);     // -1: every device

// Live device bytes of stack id `stack`, all devices (ids above the table size share one slot).
int64_t site_bytes(uint32_t stack);
inline constexpr uint32_t kTrackedStacks = 1u << 16;

// Pools the tracker places (by their location) at once; allocations from pools beyond count on
// their event's device.
inline constexpr int kTrackedPools = 256;

void forget_live_state();  // after fork

}  // namespace vt
