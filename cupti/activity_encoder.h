// CUPTI activity records -> trace records (format/activity_records.h: their fields and order).
// Owns the mapping of each CUPTI struct (CUDA 13: Kernel10, Memcpy6, Memset4, Memory4,
// MemoryPool3, Marker2) onto our payloads, timestamps put on the monotonic clock, and names
// interned. Pure: it writes through a sink, so tests feed it synthetic buffers built from
// CUPTI's own structs and read the result back with the real reader.
//
// Only fields that already existed in the CUDA 12.0 versions of these structs are read (CUPTI
// appends fields when it bumps a struct version), so an older libcupti decodes correctly too;
// tests/cupti/encoder_test.cpp checks those offsets against the deprecated structs.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "clock_align.h"
#include "name_table.h"

namespace vt::cupti {

struct RecordSink {
  void (*write)(void* ctx, uint8_t tag, const uint8_t* payload, size_t len) = nullptr;
  void* ctx = nullptr;
};

struct EncodeStats {
  uint64_t written = 0;     // trace records written (names included)
  uint64_t incomplete = 0;  // records without timestamps (forced flush before they finished)
  uint64_t ignored = 0;     // activity kinds we do not record
};

using NextRecordFn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);

class Encoder {
 public:
  Encoder(uint64_t trace_base_ns, const ClockAlign* clock, NameTable* names, RecordSink sink)
      : base_(trace_base_ns), clock_(clock), names_(names), sink_(sink) {}

  void encode(const CUpti_Activity* rec);
  // Every record of a completed buffer, through CUPTI's own iterator.
  void decode_buffer(uint8_t* buffer, size_t valid, NextRecordFn next);

  EncodeStats stats;

 private:
  struct Payload;
  uint64_t mono(uint64_t cupti_ts) const;  // a CUPTI timestamp on CLOCK_MONOTONIC
  uint32_t name_id(const char* name);
  template <class Schema, class R>
  void emit(const R& record);

  void kernel(const CUpti_ActivityKernel10& k);
  void memcpy_rec(const CUpti_ActivityMemcpy6& m);
  void memset_rec(const CUpti_ActivityMemset4& m);
  void memory(const CUpti_ActivityMemory4& m);
  void pool(const CUpti_ActivityMemoryPool3& m);
  void marker(const CUpti_ActivityMarker2& m);

  uint64_t base_;
  const ClockAlign* clock_;
  NameTable* names_;
  RecordSink sink_;
};

}  // namespace vt::cupti
