// Helpers shared by the kernel-activity tests: encoding into memory (records as the reader
// hands them out), encoding into a real trace from a forked child, and reading a trace's
// activity back through the real TraceReader and ActivityIndex.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "activity.h"
#include "activity_encoder.h"
#include "activity_format.h"
#include "clock.h"
#include "recorder_internal.h"
#include "trace_reader.h"

namespace actfix {

// Records kept in memory, for ActivityIndex tests that need no file.
struct MemorySink {
  std::vector<std::pair<uint8_t, std::vector<uint8_t>>> records;
  static void write(void* ctx, uint8_t tag, const uint8_t* p, size_t n) {
    static_cast<MemorySink*>(ctx)->records.push_back({tag, std::vector<uint8_t>(p, p + n)});
  }
  vt::cupti::RecordSink sink() { return {write, this}; }
  // As the reader would return them (payload after dt; t_ns = when written).
  std::vector<vt::analyzer::Record> as_records(uint64_t t = 0) const {
    std::vector<vt::analyzer::Record> out;
    for (const auto& [tag, bytes] : records) {
      vt::analyzer::Record r;
      r.tag = tag;
      r.t_ns = t;
      r.payload = bytes.data();
      r.payload_len = bytes.size();
      out.push_back(r);
    }
    return out;
  }
};

// A clock with a fixed offset (CUPTI time = monotonic + offset).
inline void set_offset(vt::cupti::ClockAlign* c, int64_t offset) {
  vt::cupti::ClockSample s;
  s.ok = true;
  s.offset = offset;
  s.window = 0;
  c->update(s);
}

// The trace base of the trace this process writes (child side, after the trace opened).
inline uint64_t trace_base() { return vt::g_file.header()->start_monotonic_ns; }

// Production-like sink: write_meta from the calling thread, stamped now.
inline void trace_sink_write(void*, uint8_t tag, const uint8_t* p, size_t n) { vt::write_meta(tag, p, n, vt::now_ns()); }

struct Loaded {
  vt::analyzer::ProcessInfo info;
  std::unique_ptr<vt::analyzer::ActivityIndex> index;
  std::vector<vt::analyzer::Record> events;
  std::vector<std::string> problems;
  size_t name_records = 0;
};

inline Loaded load(const std::string& path) {
  std::string err;
  auto reader = vt::analyzer::TraceReader::open(path, &err);
  INFO(path << ": " << err);
  REQUIRE(reader);
  Loaded l;
  l.info = reader->process();
  l.index = std::make_unique<vt::analyzer::ActivityIndex>(l.info.start_monotonic_ns);
  vt::analyzer::Record r;
  uint64_t end = 0;
  while (reader->next(&r)) {
    end = std::max(end, r.t_ns);
    // Memory events only, as e2e::load keeps them (context and code ops apart: not memory).
    if (r.is_event() && !(r.op && (r.op->kind == vt::MemKind::Code || r.op->kind == vt::MemKind::PoolConfig)))
      l.events.push_back(r);
    if (r.tag == vt::format::kTagKernelName) l.name_records++;
    l.index->add(r);
  }
  l.index->finish(end);
  l.problems = reader->problems();
  return l;
}

}  // namespace actfix
