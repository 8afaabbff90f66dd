// Kernel activity records for the aggregator tests, made by the production encoder from synthetic
// CUPTI structs (tests/cupti/synthetic_buffer.h), clock offset 0 and trace base 0: CUPTI time =
// trace time. Each record is appended with its record time (when the recorder would write it).
#pragma once

#include <deque>
#include <vector>

#include "activity_encoder.h"
#include "activity_format.h"
#include "clock_align.h"
#include "name_table.h"
#include "status_record.h"
#include "synthetic_buffer.h"
#include "trace_reader.h"

namespace synth_records {

struct ActivityRecords {
  vt::cupti::ClockAlign clock;
  vt::cupti::NameTable names;
  vt::cupti::Encoder enc{0, &clock, &names, {write, this}};
  std::deque<std::vector<uint8_t>> payloads;
  std::vector<vt::analyzer::Record>* out = nullptr;
  uint64_t write_at = 0;
  alignas(8) uint8_t buf[1024];

  explicit ActivityRecords(std::vector<vt::analyzer::Record>* o) : out(o) {
    vt::cupti::ClockSample s;
    s.ok = true;
    s.offset = 0;
    s.window = 0;
    clock.update(s);
  }
  static void write(void* self, uint8_t tag, const uint8_t* p, size_t n) { static_cast<ActivityRecords*>(self)->add(tag, p, n); }
  void add(uint8_t tag, const uint8_t* p, size_t n) {
    payloads.emplace_back(p, p + n);
    vt::analyzer::Record r;
    r.tag = tag;
    r.t_ns = write_at;
    r.payload = payloads.back().data();
    r.payload_len = n;
    out->push_back(r);
  }
  void started(uint64_t t) {
    uint8_t b[256];
    write_at = t;
    size_t n = vt::cupti::encode_status(vt::format::kCuptiStarted, 130001, vt::format::kCuptiKindKernel, "libcupti.so.13", b, sizeof b);
    add(vt::format::kTagCuptiStatus, b, n);
  }
  synth::Builder builder() { return synth::Builder{buf, sizeof buf}; }
  void flush(const synth::Builder& b) { enc.decode_buffer(buf, b.len, synth::next_record); }
  void kernel(const char* name, uint64_t start, uint64_t end) {
    auto b = builder();
    b.kernel(name, start, end, 1, 1);
    flush(b);
  }
  void marker(uint32_t flags, uint32_t id, uint64_t t, const char* name) {
    auto b = builder();
    b.marker(flags, id, t, 7, name);
    flush(b);
  }
  void memory(uint64_t address, uint64_t bytes, uint64_t t) {
    auto b = builder();
    b.memory(true, address, bytes, t);
    flush(b);
  }
};

}  // namespace synth_records
