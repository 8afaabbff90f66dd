// The per-thread chunk writer and the event encoder (trace_format.h: tag, payload length, dt,
// flags, fields). Owns the one implementation of an event's encoding, inlined into each hot hook
// (recorder.h's record_op) so that what the op fixes (its code, which fields it has, that it has
// no stack) folds away; recorder.cpp's encode_event is the same code for every other event.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "event.h"
#include "trace_format.h"

namespace vt {

// Per-thread writer. Plain data in initial-exec TLS: no constructor, no allocation; __thread,
// not thread_local, so no TLS wrapper call is made on the hook path.
struct ThreadWriter {
  format::ChunkHeader* chunk;
  uint8_t* cur;
  uint8_t* end;
  uint32_t gen;
  uint32_t tid;
  uint64_t last_ns;
  uint64_t last_addr;
  uint64_t ctx;  // the chunk's current context (kNoContextYet at its start: none is ~0)
  int32_t dev;
  uint64_t stream;
};
inline constexpr uint64_t kNoContextYet = ~0ull;
extern __thread ThreadWriter t_writer __attribute__((tls_model("initial-exec")));  // recorder.cpp
extern std::atomic<uint32_t> g_generation;  // bumped when the trace is replaced (fork)

// Largest event: tag, length, dt, flags, ctx+dev, stream, result+free+total, 5 fields.
inline constexpr size_t kMaxEventRecord = 2 + 1 + format::kMaxVarint * 12;  // incl. stack id
static_assert(kMaxEventRecord - 2 < 128, "event payload length must fit one varint byte");

// The time since the thread's previous record (0 when the clock went back), taken as its last.
__attribute__((always_inline)) inline uint64_t take_dt(ThreadWriter& w, uint64_t t) {
  const uint64_t dt = t > w.last_ns ? t - w.last_ns : 0;
  if (t > w.last_ns) w.last_ns = t;
  return dt;
}
// Publishes the record that ends at `end`: the reader of a live trace sees whole records only.
__attribute__((always_inline)) inline void commit_record(ThreadWriter& w, uint8_t* end) {
  w.cur = end;
  __atomic_store_n(&w.chunk->used, uint32_t(end - reinterpret_cast<uint8_t*>(w.chunk + 1)), __ATOMIC_RELEASE);
}

// The event's record when the thread needs a new chunk first (recorder.cpp; out of line).
void encode_in_new_chunk(const Event& e);

// Writes `e` into the thread's chunk. Each field is read where it is written: one load, where
// reading them all first would spill most of them to the stack (measured: docs/PERFORMANCE.md).
__attribute__((always_inline)) inline void encode_event_inline(const Event& e) {
  ThreadWriter& w = t_writer;
  if (__builtin_expect(w.gen != g_generation.load(std::memory_order_acquire) ||
                           size_t(w.end - w.cur) < kMaxEventRecord,
                       0))
    return encode_in_new_chunk(copy_of(e));
  const uint8_t fields = e.fields;
  uint8_t* p = w.cur;
  p[0] = e.code;
  uint8_t* q = p + 2;
  q = format::put_varint(q, take_dt(w, e.t_ns));
  uint8_t* flags_at = q++;
  uint8_t flags = fields;
  const int32_t device = e.device;
  const uint64_t context = e.context;
  if (device != kDeviceNotRead && (w.ctx != context || w.dev != device)) {
    flags |= format::kEvContext;
    q = format::put_varint(q, context);
    q = format::put_varint(q, uint64_t(int64_t(device) + 1));
    w.ctx = context;
    w.dev = device;
  }
  if (e.stream_ordered && e.stream != w.stream) {
    flags |= format::kEvStream;
    w.stream = e.stream;
    q = format::put_varint(q, w.stream);
  }
  if (e.result != 0) {
    flags |= format::kEvFailed;
    q = format::put_varint(q, uint32_t(e.result));
    q = format::put_varint(q, e.free_bytes);
    q = format::put_varint(q, e.total_bytes);
  }
  if (fields & format::kEvAddr) {
    const uint64_t addr = e.addr;
    q = format::put_varint(q, format::zigzag(int64_t(addr - w.last_addr)));
    w.last_addr = addr;
  }
  if (fields & format::kEvSize) q = format::put_varint(q, e.size);
  if (fields & format::kEvAux) q = format::put_varint(q, e.aux);
  if (fields & format::kEvAux2) q = format::put_varint(q, e.aux2);
  if (e.stack) {
    flags |= format::kEvStack;
    q = format::put_varint(q, e.stack);
  }
  *flags_at = flags;
  p[1] = uint8_t(q - (p + 2));
  commit_record(w, q);
}

}  // namespace vt
