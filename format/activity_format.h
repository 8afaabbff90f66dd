// The trace records of kernel activity (CUPTI), shared by the writer (cupti/) and the reader
// (analyzer/read/activity.cpp). Owns: the tags 0x8A..0x91, the status kinds and codes, the
// enabled-kind bits; the records' fields are activity_records.h's. docs/trace-format.md ("Kernel
// activity records", "CUPTI status") is the prose version.
//
// Every payload is framed by write_meta (tag, length, dt) and then holds varints only, plus
// "strings" (varint length + bytes). Times inside payloads are absolute CLOCK_MONOTONIC ns,
// written as zigzag(t - FileHeader::start_monotonic_ns): a record's own dt is the moment it was
// *written* (up to ~100 ms after the kernel ran), so activity times never ride on it.
#pragma once

#include <cstdint>

namespace vt::format {

enum ActivityTag : uint8_t {
  kTagKernel = 0x8A,       // one kernel (CONCURRENT_KERNEL)
  kTagMemcpy = 0x8B,       // one copy (MEMCPY)
  kTagMemset = 0x8C,       // one memset (MEMSET)
  kTagCuptiMemory = 0x8D,  // one allocation or release seen by CUPTI (MEMORY2)
  kTagMemoryPool = 0x8E,   // a pool created, destroyed or trimmed (MEMORY_POOL)
  kTagNvtx = 0x8F,         // one NVTX marker: range start, range end or instant (MARKER)
  kTagCuptiStatus = 0x90,  // what the kernel recorder is doing (kinds below)
  kTagKernelName = 0x91,   // varint id, string name: written once per distinct name
};

inline bool is_activity_tag(uint8_t tag) { return tag >= kTagKernel && tag <= kTagKernelName; }

// kTagCuptiStatus: varint kind, varint code, zigzag value, string text.
enum CuptiStatusKind : uint8_t {
  kCuptiStarted = 1,      // code: cuptiGetVersion; value: enabled kCuptiKind* bits; text: library path
  kCuptiUnavailable = 2,  // code: kCuptiWhy*; value: CUptiResult (0 if none); text: detail
  kCuptiSteppedAside = 3, // code: index of the entry point in cupti/wrapped_list.h (+1); text: its name
                          // and, when CUPTI said, the other subscriber's name. Record time = when.
  kCuptiClock = 4,        // code: sampling window ns; value: offset = CUPTI timestamp - monotonic
  kCuptiDropped = 5,      // code: kCuptiLost*; value: records lost since the last such record
  kCuptiStopped = 6,      // code: 1 = process exit flush, 2 = trace close; value: records written
  kCuptiBuffers = 7,      // code: CUPTI's device buffers per context at most (0: its default);
                          // value: bytes per device buffer (0: unknown); text: activity buffers
                          // "per process" (per-thread buffers off) or "per thread" (CUPTI refused)
  kCuptiResumed = 8,      // the other client let CUPTI go and vramtrace records again. code: index
                          // of the entry point it released with (+1); value: when vramtrace had
                          // stepped aside (the gap is [value, record time]); text: its name
  kCuptiFinalize = 9,     // after stepping aside for a client of another libcupti copy: code
                          // kCuptiFinalize*; value: forced flushes tried; text: why
};

enum CuptiFinalizeCode : uint8_t {
  kCuptiFinalizeDone = 1,      // cuptiFinalize ran on vramtrace's thread, no kernel in flight
  kCuptiFinalizeInFlight = 2,  // skipped: kernels stayed in flight (unfinished records at every flush)
  kCuptiFinalizeTimeout = 3,   // skipped: vramtrace's thread did not answer in time
};

enum CuptiUnavailableReason : uint8_t {
  kCuptiWhyDisabled = 1,      // VRAMTRACE_KERNELS=0 / vramtrace run --no-kernels
  kCuptiWhyNotFound = 2,      // no libcupti could be loaded
  kCuptiWhyMissingSymbol = 3, // libcupti lacks an entry point we need (text: its name)
  kCuptiWhyOtherTool = 4,     // another tool is injected (text: the environment variable)
  kCuptiWhyOtherClient = 5,   // another CUPTI client holds the subscription (text: who, if known)
  kCuptiWhyError = 6,         // a CUPTI call failed (value: CUptiResult; text: call and message)
  kCuptiWhyForked = 7,        // a forked child: CUPTI and CUDA belong to the parent
  kCuptiWhyNoKinds = 8,       // no activity kind could be enabled
};

enum CuptiLostCode : uint8_t {
  kCuptiLostDropped = 1,     // CUPTI dropped records (no free buffer): cuptiActivityGetNumDroppedRecords
  kCuptiLostIncomplete = 2,  // records without timestamps (a forced flush before they finished)
  kCuptiLostNoBuffer = 3,    // buffer requests we could not satisfy (the pool was exhausted)
  kCuptiLostHandover = 4,    // records in our buffers that CUPTI completed after we stepped aside
                             // (consumed and dropped: never handed to the other client)
};

// Bits of kCuptiStarted's value: which activity kinds were enabled.
enum CuptiKindBit : uint32_t {
  kCuptiKindKernel = 1u << 0,
  kCuptiKindMemcpy = 1u << 1,
  kCuptiKindMemset = 1u << 2,
  kCuptiKindMemory = 1u << 3,
  kCuptiKindMemoryPool = 1u << 4,
  kCuptiKindNvtx = 1u << 5,
};

// kTagNvtx flags (CUPTI's CUpti_ActivityFlag marker bits, kept as they are).
inline constexpr uint32_t kNvtxInstant = 1u << 0;
inline constexpr uint32_t kNvtxStart = 1u << 1;
inline constexpr uint32_t kNvtxEnd = 1u << 2;

// kTagKernel flags.
inline constexpr uint32_t kKernelDeviceLaunched = 1u << 0;

// Longest kernel name kept (mangled C++ template names run to a few KiB; a cut name no longer
// demangles, so the limit is generous) and longest NVTX name / domain.
inline constexpr uint32_t kMaxKernelName = 16384;
inline constexpr uint32_t kMaxNvtxText = 1024;

}  // namespace vt::format
