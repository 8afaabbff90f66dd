// See status_record.h.
#include "status_record.h"

#include <cstring>

#include "activity_format.h"
#include "clock.h"
#include "recorder_internal.h"
#include "trace_format.h"

namespace vt::cupti {

size_t encode_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint8_t* out, size_t cap) {
  if (cap < 4 * format::kMaxVarint) return 0;
  uint8_t* q = out;
  q = format::put_varint(q, kind);
  q = format::put_varint(q, code);
  q = format::put_varint(q, format::zigzag(value));
  size_t n = text ? strlen(text) : 0;
  size_t room = cap - size_t(q - out) - format::kMaxVarint;
  if (n > room) n = room;
  q = format::put_varint(q, n);
  if (n) memcpy(q, text, n);
  return size_t(q - out) + n;
}

void write_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint64_t t) {
  uint8_t buf[1024];
  size_t n = encode_status(kind, code, value, text, buf, sizeof buf);
  write_meta(format::kTagCuptiStatus, buf, n, t ? t : now_ns());
}

}  // namespace vt::cupti
