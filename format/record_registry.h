// Every metadata record of the format (tags >= 0x80), one row each, in docs/trace-format.md's
// order (its metadata, PyTorch and kernel activity tables). The one list from which come
// `vramtrace dump`'s decoder (analyzer/render/record_json.cpp), the docs tables' check
// (tests/unit/doc_tables_test.cpp, which also checks that every tag 0x80.. is here once) and the
// reader's routing (analyzer/read/trace_reader.h, is_stack_meta). A record's fields, their order, wire
// kinds, JSON keys and doc words are its schema's (meta_records.h, pytorch_records.h,
// activity_records.h); its tag is the schema's kTag (trace_format.h, activity_format.h).
//
// A new record: its struct and schema beside the others, its tag, and a row here.
//
//   RECORD(Schema, Record, clock, read_by, damaged)
//   ROWS(Schema, Record, RowSchema, Row, count member, max rows read, read_by)
// clock: Chunk when its times are relative to the chunk's base (kernel activity), else None.
// read_by: Stacks (the reader's stack store, loaded before the stream: what symbolizes),
//   Reader (the reader itself: process, devices, the end marker) or Stream (the aggregators).
// damaged: how dump shows a damaged record: Partial (the fields read, "damaged": true) or Empty
//   (no fields: a cut argv would read as another command line).
#pragma once

#include <array>
#include <cstdint>

#include "activity_records.h"
#include "meta_records.h"
#include "pytorch_records.h"

namespace vt::format {

enum class RecordClock { None, Chunk };
enum class ReadBy { Stacks, Reader, Stream };
enum class DamagedShown { Partial, Empty };

#define VT_FOR_EACH_RECORD(RECORD, ROWS)                                                                      \
  RECORD(ProcessSchema, ProcessRecord, None, Reader, Empty)                                                   \
  RECORD(DeviceSchema, DeviceRecord, None, Reader, Partial)                                                   \
  RECORD(EndSchema, EndRecord, None, Reader, Partial)                                                         \
  RECORD(NoteSchema, NoteRecord, None, Stream, Partial)                                                       \
  ROWS(StackSchema, StackRecord, StackFrameSchema, StackFrameRow, frames, ::vt::format::kMaxStackRecordFrames, Stacks)      \
  RECORD(ModuleSchema, ModuleRecord, None, Stacks, Partial)                                                   \
  RECORD(PyCodeSchema, PyCodeRecord, None, Stacks, Partial)                                                   \
  RECORD(ThreadSchema, ThreadRecord, None, Stacks, Partial)                                                   \
  RECORD(ConfigSchema, ConfigRecord, None, Stacks, Partial)                                                   \
  ROWS(GpuProcessesSchema, GpuProcessesRecord, GpuProcessSchema, GpuProcessRow, count, ~uint64_t(0), Stream)  \
  RECORD(RegionSchema, RegionRecord, None, Stream, Partial)                                                   \
  RECORD(LookupSchema, LookupRecord, None, Stream, Partial)                                                   \
  ROWS(StackDeltaSchema, StackDeltaRecord, StackDeltaFrameSchema, StackDeltaFrameRow, fresh,                  \
       ::vt::format::kMaxStackRecordFrames, Stacks)                                                                         \
  ROWS(PoolUsageSchema, PoolUsageRecord, PoolUsageRowSchema, PoolUsageRow, count, ::vt::format::kMaxPoolUsageRows, Stream)  \
  RECORD(PoolSyncSchema, PoolSyncRecord, None, Stream, Partial)                                               \
  RECORD(TorchBlockSchema, TorchBlockRecord, None, Stream, Partial)                                           \
  RECORD(TorchOomSchema, TorchOomRecord, None, Stream, Partial)                                               \
  RECORD(TorchStatusSchema, TorchStatusRecord, None, Stream, Partial)                                         \
  RECORD(TorchConfigSchema, TorchConfigRecord, None, Stream, Partial)                                         \
  RECORD(TorchAllocSchema, TorchAllocRecord, None, Stream, Partial)                                           \
  RECORD(TorchStreamAllocSchema, TorchStreamAllocRecord, None, Stream, Partial)                               \
  RECORD(KernelSchema, KernelRecord, Chunk, Stream, Partial)                                                  \
  RECORD(MemcpySchema, CopyRecord, Chunk, Stream, Partial)                                                    \
  RECORD(MemsetSchema, CopyRecord, Chunk, Stream, Partial)                                                    \
  RECORD(CuptiMemorySchema, CuptiMemoryRecord, Chunk, Stream, Partial)                                        \
  RECORD(PoolSchema, PoolRecord, Chunk, Stream, Partial)                                                      \
  RECORD(NvtxSchema, NvtxRecord, Chunk, Stream, Partial)                                                      \
  RECORD(CuptiStatusSchema, CuptiStatusRecord, None, Stream, Partial)                                         \
  RECORD(KernelNameSchema, KernelNameRecord, None, Stream, Partial)

// Who reads each tag, indexed by tag (ReadBy::Stream for a tag no row has: events, and a newer
// writer's record, which the aggregators skip). A table: the reader asks once per record.
inline constexpr auto kReadBy = [] {
  std::array<ReadBy, 256> t{};
  for (ReadBy& r : t) r = ReadBy::Stream;
#define VT_READ_BY_RECORD(S, R, clock, by, damaged) t[S::kTag] = ReadBy::by;
#define VT_READ_BY_ROWS(S, R, RS, Row, count, max, by) t[S::kTag] = ReadBy::by;
  VT_FOR_EACH_RECORD(VT_READ_BY_RECORD, VT_READ_BY_ROWS)
#undef VT_READ_BY_RECORD
#undef VT_READ_BY_ROWS
  return t;
}();

}  // namespace vt::format
