// Writing kTagCuptiStatus records (format/activity_records.h): what the kernel recorder did
// and why, so a trace without kernel records says whether CUPTI was missing, refused, disabled
// or handed over to another client, and when.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt::cupti {

// Encodes the payload into out[cap]; returns its length.
size_t encode_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint8_t* out, size_t cap);

// Appends one status record to the calling thread's chunk, stamped `t` (default: now). On the
// thread that opens the trace, pass the opening event's time: a later stamp would push that
// event's own time forward (a chunk's times never go back).
void write_status(uint8_t kind, uint64_t code, int64_t value, const char* text, uint64_t t = 0);

}  // namespace vt::cupti
