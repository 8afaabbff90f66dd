// Python's pickle format (protocol 2: every Python 3 reads it), written as a stream: the subset a
// memory snapshot needs (dicts, lists, tuples, ints, strings, booleans, None) and the memo, so an
// object written once (a stack's frame list) is referenced after that by its index. The writer
// keeps nothing but its output buffer and the open containers. Opcodes: CPython's
// Lib/pickletools.py. Items go in batches of at most 1000 between a MARK and a SETITEMS or
// APPENDS, as pickle itself writes them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "utf8.h"

namespace vt::analyzer {

class PickleWriter {
 public:
  // `fragment`: a piece of another pickle (one value, embedded with raw_value()): no header.
  explicit PickleWriter(std::ostream& out, bool fragment = false) : out_(out) {
    buf_.reserve(kFlushAt + 4096);
    if (fragment) return;
    byte(0x80);  // PROTO 2
    byte(2);
  }
  PickleWriter(const PickleWriter&) = delete;
  PickleWriter& operator=(const PickleWriter&) = delete;

  // A dict (keys and values alternately) or a list, its items, then end(). `memo` >= 0: the
  // container is remembered as that memo index (0, 1, 2, ... in order) for recall().
  void begin_dict() { begin('}', 'u'); }
  void begin_list() { begin(']', 'e'); }
  void end(int64_t memo = -1) {
    close_batch();
    --depth_;
    if (memo >= 0) {
      byte('r');  // LONG_BINPUT
      le(uint64_t(memo), 4);
    }
    done();
  }
  void recall(uint32_t memo) {
    start();
    byte('j');  // LONG_BINGET
    le(memo, 4);
    done();
  }

  void none() { scalar('N'); }
  void boolean(bool b) { scalar(b ? 0x88 : 0x89); }
  void integer(int64_t v) {
    start();
    if (v >= 0 && v < 256) {
      byte('K');  // BININT1
      byte(int(v));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      byte('J');  // BININT: 4 bytes, little-endian, signed
      le(uint32_t(int32_t(v)), 4);
    } else {
      byte(0x8a);  // LONG1: n bytes, little-endian two's complement
      byte(8);
      le(uint64_t(v), 8);
    }
    done();
  }
  void unsigned_integer(uint64_t v) {
    if (v <= uint64_t(INT64_MAX)) return integer(int64_t(v));
    start();
    byte(0x8a);  // 9 bytes, so the top bit does not read as a sign
    byte(9);
    le(v, 8);
    byte(0);
    done();
  }
  // Text: pickle decodes it strictly as UTF-8, so bytes that are not (a file name from the trace)
  // become U+FFFD rather than make the whole pickle unreadable.
  void string(std::string_view text) {
    std::string fixed = valid_utf8(text);
    start();
    byte('X');  // BINUNICODE: 4-byte length
    le(fixed.size(), 4);
    buf_.append(fixed);
    done();
  }
  // A tuple of the `n` (1 to 3) values written just before, inside the current container: call
  // tuple_begin() before them and tuple_end(n) after.
  void tuple_begin() {
    start();
    ++tuple_depth_;
  }
  void tuple_end(int n) {
    --tuple_depth_;
    byte(0x84 + n);  // TUPLE1..TUPLE3
    done();
  }

  // One complete value written elsewhere (a fragment's bytes), copied in by `copy(stream)`, which
  // returns false when it could not read them.
  template <class Copy>
  bool raw_value(Copy copy) {
    start();
    flush();
    bool ok = copy(out_);
    done();
    return ok;
  }
  // What is buffered, to the stream (a fragment's end).
  void flush_only() { flush(); }

  // The end of the pickle; everything written to the stream. False when the stream failed.
  bool finish() {
    byte('.');  // STOP
    flush();
    out_.flush();
    return bool(out_);
  }

 private:
  static constexpr size_t kFlushAt = 1 << 16;
  static constexpr int kBatch = 1000;
  static constexpr int kMaxDepth = 32;
  struct Level {
    char close = 0;  // 'u' (SETITEMS) or 'e' (APPENDS)
    int values = 0;  // in the open batch
    bool open = false;
  };

  void byte(int c) { buf_.push_back(static_cast<char>(c)); }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void flush() {
    out_.write(buf_.data(), std::streamsize(buf_.size()));
    buf_.clear();
  }
  void scalar(int op) {
    start();
    byte(op);
    done();
  }
  void begin(char empty, char close) {
    start();
    byte(empty);
    levels_[++depth_] = Level{close, 0, false};
  }
  // Before a value of the current container: the batch's MARK, when none is open.
  void start() {
    if (depth_ < 1 || tuple_depth_ > 0) return;
    Level& l = levels_[depth_];
    if (!l.open) {
      byte('(');  // MARK
      l.open = true;
    }
  }
  // After a complete value: a full batch is closed (a dict's only after a value, not a key).
  void done() {
    if (buf_.size() >= kFlushAt) flush();
    if (depth_ < 1 || tuple_depth_ > 0) return;
    Level& l = levels_[depth_];
    if (++l.values >= (l.close == 'u' ? 2 * kBatch : kBatch)) close_batch();
  }
  void close_batch() {
    Level& l = levels_[depth_];
    if (l.open) byte(l.close);
    l.open = false;
    l.values = 0;
  }

  std::ostream& out_;
  std::string buf_;
  Level levels_[kMaxDepth + 1];
  int depth_ = 0;
  int tuple_depth_ = 0;
};

}  // namespace vt::analyzer
