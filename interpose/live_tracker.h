// What is live right now, inside the traced process: bytes per device and bucket, the peak per
// device, and bytes per call site. Fed by the recorder with every successful event; read by the
// public API (include/vramtrace.h: the pytest plugin's limits) and the shared-memory summary that
// `vramtrace top` shows. The traced program's frees carry only an address, so the size of every
// live allocation is kept in a sharded hash map (a short spinlock per shard, never held while
// unwinding or writing the trace).
#pragma once

#include <cstdint>

#include "event.h"
#include "shm_layout.h"

namespace vt {

using format::kTrackedDevices;  // the devices `vramtrace top` shows a row of
inline constexpr int kLiveDevice = int(Bucket::Device);

// Applies a successful event (same accounting as the analyzer's replay, simplified: VMM physical
// memory counts from create to release).
void track_event(const Event& e);

int64_t live_bytes(int device, int bucket);  // device -1: all devices
int64_t peak_bytes(int device);              // device bucket; -1: the highest device
void reset_peak(int device);     // -1: every device

// Live device bytes of stack id `stack` (ids above the table size share one slot).
int64_t site_bytes(uint32_t stack);
inline constexpr uint32_t kTrackedStacks = 1u << 16;

void forget_live_state();  // after fork

}  // namespace vt
