// The one writer and the one reader of record payloads: varints, zigzag varints and strings
// (a varint length, then the bytes), as trace_format.h defines them. Every metadata and activity
// record is written with PayloadWriter and read with PayloadReader, field by field as its schema
// says (schema.h).
//
// PayloadWriter writes into the caller's fixed buffer (on the stack: it runs on the hook path, so
// no heap, no formatting, no exceptions). Every put checks the room left: a string is cut to fit;
// a varint that does not fit is dropped and the writer marked full (ok() false): nothing is
// written past the end, nor after it. Memory events are not written with it: recorder.cpp's
// encode_event writes them straight into the chunk with put_varint, within a bound checked at
// compile time (the hottest path of all: no per-field room check).
//
// PayloadReader reads fields in order from [p, end). A cut or over-long varint, or a string
// longer than what is left, makes ok() false; every later read then returns 0 or empty. Fields
// a newer writer appended are simply not read (the format only ever appends fields).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "trace_format.h"

namespace vt::format {

class PayloadWriter {
 public:
  PayloadWriter(uint8_t* buf, size_t cap) : begin_(buf), p_(buf), end_(buf + cap) {}

  void varint(uint64_t v) {
    if (!full_ && (size_t(end_ - p_) >= kMaxVarint || varint_size(v) <= size_t(end_ - p_))) {
      p_ = put_varint(p_, v);
    } else {
      full_ = true;  // and nothing after it: the payload stays a valid prefix
    }
  }
  void zigzag(int64_t v) { varint(format::zigzag(v)); }
  // A string of `n` bytes, cut to what fits after its length.
  void bytes(const void* data, size_t n) {
    size_t room = size_t(end_ - p_);
    size_t len_size = varint_size(n);  // a cut length needs no more bytes than n's
    if (len_size + n > room) n = room > len_size ? room - len_size : 0;
    varint(n);
    if (full_ || n == 0) return;
    memcpy(p_, data, n);
    p_ += n;
  }
  // A NUL-terminated string, at most `max` bytes of it; nullptr writes an empty string.
  void string(const char* s, size_t max) { bytes(s ? s : "", s ? strnlen(s, max) : 0); }
  // Bytes with no length before them (a record whose last field is the rest of its payload),
  // cut to what fits.
  void raw(const void* data, size_t n) {
    if (full_) return;
    if (n > size_t(end_ - p_)) n = size_t(end_ - p_);
    if (n) memcpy(p_, data, n);
    p_ += n;
  }

  const uint8_t* data() const { return begin_; }
  size_t size() const { return size_t(p_ - begin_); }
  // False when a varint was dropped for lack of room (strings are cut, not failed).
  bool ok() const { return !full_; }

  static constexpr size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) v >>= 7, ++n;
    return n;
  }

 private:
  uint8_t* begin_;
  uint8_t* p_;
  uint8_t* end_;
  bool full_ = false;
};

class PayloadReader {
 public:
  PayloadReader(const uint8_t* p, size_t n) : p_(p), end_(p + n), load_end_(end_) {}
  // `readable_end` (>= p + n): memory that may be loaded past the payload, never decoded (a
  // record's chunk: its next records). Lets varint() load 8 bytes at once near a payload's end.
  PayloadReader(const uint8_t* p, size_t n, const uint8_t* readable_end)
      : p_(p), end_(p + n), load_end_(readable_end > end_ ? readable_end : end_) {}

  // One, two and three bytes inline (most deltas, flags, stack ids), then four to eight bytes
  // with one 8-byte load (sizes and address deltas: 1.5 of them per event of gen_trace's churn,
  // ~38 instructions each byte by byte), the rest through get_varint: the reader decodes ~10^8 of
  // these per second. Always inlined: GCC kept it out of line, a call 3.6 times per event (issue 43).
  __attribute__((always_inline)) uint64_t varint() {
    if (p_ < end_ && *p_ < 0x80) return *p_++;
    if (end_ - p_ >= 2 && p_[1] < 0x80) {
      uint64_t v = uint64_t(p_[0] & 0x7f) | uint64_t(p_[1]) << 7;
      p_ += 2;
      return v;
    }
    if (end_ - p_ >= 3 && p_[2] < 0x80) {
      uint64_t v = uint64_t(p_[0] & 0x7f) | uint64_t(p_[1] & 0x7f) << 7 | uint64_t(p_[2]) << 14;
      p_ += 3;
      return v;
    }
    if (end_ - p_ >= 4 && p_[3] < 0x80) {
      uint64_t v = uint64_t(p_[0] & 0x7f) | uint64_t(p_[1] & 0x7f) << 7 | uint64_t(p_[2] & 0x7f) << 14 |
                   uint64_t(p_[3]) << 21;
      p_ += 4;
      return v;
    }
    if (load_end_ - p_ >= 8) {
      uint64_t w;
      memcpy(&w, p_, 8);
      const uint64_t stops = ~w & 0x8080808080808080ull;
      const unsigned len = unsigned(__builtin_ctzll(stops | (1ull << 63)) >> 3) + 1;  // (9, 10 bytes: 8, below)
      if (stops && len <= size_t(end_ - p_)) {
        p_ += len;
        return join7(w, stops);
      }
    }
    uint64_t v = 0;
    if (!ok_ || !(p_ = get_varint(p_, end_, &v))) {
      ok_ = false;
      p_ = end_;
      return 0;
    }
    return v;
  }
  // The same for values that are usually 5-8 bytes long (native frame addresses: 47 bits, 7
  // bytes): one 8-byte load, the last byte found with one ctz, the 7-bit groups joined in three
  // mask-and-shift steps. For a 24-frame stack record this took the analysis of a trace where
  // every event has a new stack from 23% of its time in varint() to (docs/PERFORMANCE.md, "Many
  // distinct stacks"); for the short values of events the byte loop above is cheaper.
  uint64_t varint_wide() {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "varint_wide assumes a little-endian load");
    if (end_ - p_ >= 8) {
      uint64_t w;
      memcpy(&w, p_, 8);
      uint64_t stops = ~w & 0x8080808080808080ull;
      if (stops) {
        p_ += unsigned(__builtin_ctzll(stops) >> 3) + 1;  // bytes, the last one included
        return join7(w, stops);
      }
    }
    return varint();  // 9 or 10 bytes, or near the end of the payload
  }
  uint32_t u32() { return uint32_t(varint()); }
  // The value of the little-endian varint bytes in `w` that end at the lowest bit of `stops`
  // (nonzero): the 7-bit groups joined in three mask-and-shift steps.
  __attribute__((always_inline)) static uint64_t join7(uint64_t w, uint64_t stops) {
    // The bytes up to the last one: below its stop bit (wraps to all ones for the 8th byte).
    uint64_t x = w & ((((stops & -stops) << 1) - 1) & 0x7f7f7f7f7f7f7f7full);
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    return (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
  }
  int64_t zigzag() { return unzigzag(varint()); }
  // A string's bytes, in place: false (and ok() false) when it runs past the payload.
  bool bytes(const uint8_t** data, size_t* n) {
    uint64_t len = varint();
    if (!ok_ || len > uint64_t(end_ - p_)) {
      ok_ = false;
      p_ = end_;
      *data = p_;
      *n = 0;
      return false;
    }
    *data = p_;
    *n = size_t(len);
    p_ += len;
    return true;
  }
  std::string str() {
    const uint8_t* d;
    size_t n;
    return bytes(&d, &n) ? std::string(reinterpret_cast<const char*>(d), n) : std::string();
  }
  // The bytes not read yet (for a record whose last field is the rest of its payload).
  const uint8_t* pos() const { return p_; }
  const uint8_t* end() const { return end_; }
  bool at_end() const { return p_ >= end_; }
  void skip_rest() { p_ = end_; }
  uint8_t byte() { return p_ < end_ ? *p_++ : 0; }  // a raw byte (an event's flags); 0 at the end
  bool ok() const { return ok_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* load_end_;
  bool ok_ = true;
};

}  // namespace vt::format
