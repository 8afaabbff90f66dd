// See status_record.h.
#include "status_record.h"

#include <cstring>

#include "activity_records.h"
#include "clock.h"
#include "payload.h"
#include "recorder_port.h"

namespace vt::cupti {

size_t encode_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint8_t* out, size_t cap) {
  format::PayloadWriter p(out, cap);
  format::CuptiStatusRecord r;
  r.kind = kind;
  r.code = code;
  r.value = value;
  r.text = text ? format::Text(text, strnlen(text, cap)) : format::Text();
  format::encode<format::CuptiStatusSchema>(p, r);
  return p.ok() ? p.size() : 0;
}

void write_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint64_t t) {
  uint8_t buf[1024];
  size_t n = encode_status(kind, code, value, text, buf, sizeof buf);
  port::write_record(format::kTagCuptiStatus, buf, n, t ? t : now_ns());
}

}  // namespace vt::cupti
