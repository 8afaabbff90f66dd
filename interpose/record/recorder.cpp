// See recorder.h. The event encoding itself is thread_writer.h's.
#include "recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "recorder_internal.h"
#include "thread_writer.h"
#include "trace_format.h"

namespace vt {

namespace fmt = format;

__thread ThreadWriter t_writer __attribute__((tls_model("initial-exec")));

namespace {

uint32_t thread_id() {
  ThreadWriter& w = t_writer;
  if (w.tid == 0 || w.gen != g_generation.load(std::memory_order_relaxed))
    w.tid = uint32_t(syscall(SYS_gettid));
  return w.tid;
}

// A new chunk for this thread (its first record, a full chunk, a fork) at time t: its first
// byte (a whole chunk's payload is room for any record), or nullptr when writing has stopped.
__attribute__((noinline)) uint8_t* begin_chunk(uint32_t gen, uint64_t t) {
  ThreadWriter& w = t_writer;
  uint32_t tid = thread_id();
  fmt::ChunkHeader* c = g_file.claim_chunk(tid, t);
  if (!c) {
    w.chunk = nullptr;
    w.cur = w.end = nullptr;  // the fast check below fails until a chunk is had again
    // Writing has stopped (a full disk, the size limit, the file lost): the record is lost, and
    // the header says how many were (they read as never made otherwise).
    count_lost_events(1);
    return nullptr;
  }
  w = ThreadWriter{};
  w.chunk = c;
  w.cur = reinterpret_cast<uint8_t*>(c + 1);
  w.end = reinterpret_cast<uint8_t*>(c) + fmt::kChunkSize;
  w.gen = gen;
  w.tid = tid;
  w.last_ns = t;
  w.ctx = kNoContextYet;  // the chunk's first event sends its context
  return w.cur;
}

// Space for a record of at most `max_len` bytes at time t, or nullptr when writing has stopped.
// Inlined: on every event it is a generation compare and a bounds check (no chunk: cur = end).
__attribute__((always_inline)) inline uint8_t* begin_record(size_t max_len, uint64_t t) {
  ThreadWriter& w = t_writer;
  uint32_t gen = g_generation.load(std::memory_order_acquire);
  if (__builtin_expect(w.gen == gen && size_t(w.end - w.cur) >= max_len, 1)) return w.cur;
  return begin_chunk(gen, t);
}

}  // namespace

// The event's record when the thread needs a new chunk first: then the usual way (a tail call
// from encode_event_inline, whose own path then makes no call and needs no stack frame).
__attribute__((noinline)) void encode_in_new_chunk(const Event& e) {
  if (begin_chunk(g_generation.load(std::memory_order_acquire), e.t_ns)) encode_event_inline(e);
}

void encode_event(const Event& e) { encode_event_inline(e); }

void encode_varint_record(uint8_t tag, uint64_t t, const uint64_t* v, int n) {
  if (n < 0 || n > kMaxVarintFields) return;
  uint8_t* p = begin_record(2 + fmt::kMaxVarint * size_t(n + 1), t);
  if (!p) return;
  uint8_t* q = fmt::put_varint(p + 2, take_dt(t_writer, t));
  for (int i = 0; i < n; ++i) q = fmt::put_varint(q, v[i]);
  p[0] = tag;
  p[1] = uint8_t(q - (p + 2));
  commit_record(t_writer, q);
}

bool write_meta(uint8_t tag, const uint8_t* payload, size_t len, uint64_t t) {
  if (len > fmt::kChunkPayload - 16) len = fmt::kChunkPayload - 16;
  uint8_t* p = begin_record(len + 16, t);
  if (!p) return false;
  uint8_t* q = p;
  *q++ = tag;
  uint8_t dt_buf[fmt::kMaxVarint];
  size_t dt_len = size_t(fmt::put_varint(dt_buf, take_dt(t_writer, t)) - dt_buf);
  q = fmt::put_varint(q, dt_len + len);
  memcpy(q, dt_buf, dt_len);
  q += dt_len;
  memcpy(q, payload, len);
  commit_record(t_writer, q + len);
  return true;
}

}  // namespace vt
