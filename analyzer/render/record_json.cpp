// See record_json.h.
#include "record_json.h"

#include "record_registry.h"

#include <cstdio>

#include "accounting.h"
#include "activity_records.h"
#include "meta_records.h"
#include "pytorch_records.h"
#include "op_table.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// One optional field under the name the op table gives it (`unnamed` for an op it does not know).
void put_field(nlohmann::json& j, Field f, const char* unnamed, uint64_t v) {
  if (f == Field::Location) {
    j["location"] = {{"type", location_type_name(location_type_of(v))}, {"id", int32_t(uint32_t(v))}};
    if (v & kLocationManaged) j["location"]["managed"] = true;
  } else {
    j[f == Field::None ? unnamed : field_info(f).json] = v;
  }
}

}  // namespace

void FreedMemoryPlaces::place(Record* r) {
  if (!r->op || !changes_memory(r->result) || !r->has(format::kEvAddr)) return;
  const Effect fx = effect_of(*r->op, *r);
  if (fx == Effect::Allocate) {
    live_[r->addr] = {r->context, r->device};  // rule 3: replaces what was there
  } else if (fx == Effect::Free) {
    auto it = live_.find(r->addr);
    r->context = it == live_.end() ? 0 : it->second.first;
    r->device = it == live_.end() ? -1 : it->second.second;
    if (it != live_.end()) live_.erase(it);
  }
}

nlohmann::json event_json(const Record& r) {
  nlohmann::json j;
  j["t_ns"] = r.t_ns;
  j["tid"] = r.tid;
  j["op"] = r.op ? r.op->name : ("unknown_op_" + std::to_string(r.tag));
  j["kind"] = r.op ? kind_name(r.op->kind) : "unknown";
  j["result"] = r.result;
  j["device"] = r.device;
  j["context"] = hex(r.context);
  OpFields f = r.op ? r.op->fields : OpFields{Field::None, Field::None, Field::None, Field::None};
  if (r.has(format::kEvAddr)) put_field(j, f.addr, "address", r.addr);
  if (r.has(format::kEvSize)) put_field(j, f.size, "size", r.size);
  if (r.op && r.op->kind == MemKind::Async) j["stream"] = hex(r.stream);
  if (r.has(format::kEvAux)) put_field(j, f.aux, "aux", r.aux);
  if (r.has(format::kEvAux2)) put_field(j, f.aux2, "aux2", r.aux2);
  if (r.has(format::kEvFailed)) {
    j["free_bytes"] = r.free_bytes;
    j["total_bytes"] = r.total_bytes;
  }
  return j;
}

namespace {

// A record's fields under the JSON keys its schema gives them (format/meta_records.h).
class JsonFields {
 public:
  explicit JsonFields(nlohmann::json& j) : j_(j) {}
  template <format::Wire K, class T>
  void field(const T& m, const char* key, const char*) {
    if constexpr (K == format::Wire::TextList) {
      j_[key] = split_argv(m);
    } else if constexpr (K == format::Wire::Bytes) {  // hex; "" when every byte is 0 (unknown)
      j_[key] = m.find_first_not_of('\0') == format::Text::npos ? std::string() : hex_bytes(m);
    } else if constexpr (format::kIsText<T>) {
      j_[key] = std::string(m);
    } else if constexpr (K == format::Wire::Triple) {
      j_[key] = {m[0], m[1], m[2]};
    } else {
      j_[key] = m;
    }
  }

 private:
  static std::string hex_bytes(format::Text b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (unsigned char c : b) s += {d[c >> 4], d[c & 15]};
    return s;
  }
  nlohmann::json& j_;
};

template <class Schema, class R>
void put_record(nlohmann::json& j, const Record& r, bool keep_partial, uint64_t base_ns = 0) {
  R rec;
  bool ok = format::decode<Schema>(r.payload, r.payload_len, &rec, base_ns);
  if (!ok && !keep_partial) rec = R{};
  j["record"] = Schema::kName;
  JsonFields out(j);
  Schema::visit(rec, out);
  if (!ok && keep_partial) j["damaged"] = true;
}

// A header and its `count` rows (stacks, pool usage): the header's fields, then "rows", each row
// with its own schema's fields. At most `max_rows` rows are read, as the reader does.
template <class HeadSchema, class Head, class RowSchema, class Row, class Count>
void put_rows(nlohmann::json& j, const Record& r, Count Head::*count, uint64_t max_rows) {
  format::PayloadReader in(r.payload, r.payload_len);
  Head head;
  j["record"] = HeadSchema::kName;
  bool ok = format::decode<HeadSchema>(in, &head);
  JsonFields out(j);
  HeadSchema::visit(head, out);
  j["rows"] = nlohmann::json::array();
  for (uint64_t i = 0; ok && i < uint64_t(head.*count) && i < max_rows; ++i) {
    Row row;
    ok = format::decode<RowSchema>(in, &row);
    if (!ok) break;
    nlohmann::json x;
    JsonFields row_out(x);
    RowSchema::visit(row, row_out);
    j["rows"].push_back(std::move(x));
  }
  if (!ok) j["damaged"] = true;
}

// NVML's process list (kTagGpuProcesses): each process's memory, null where NVML could not tell.
void gpu_processes_json(nlohmann::json& j, const Record& r) {
  GpuProcessList list;
  j["record"] = format::GpuProcessesSchema::kName;
  if (!decode_gpu_processes(r, &list)) {
    j["damaged"] = true;
    return;
  }
  j["device"] = list.device;
  j["processes"] = nlohmann::json::array();
  for (const GpuProcess& g : list.processes)
    j["processes"].push_back({{"pid", g.pid},
                              {"name", g.name},
                              {"bytes", g.bytes == kNvmlNotAvailable ? nlohmann::json() : nlohmann::json(g.bytes)}});
}

}  // namespace

nlohmann::json meta_json(const Record& r, uint64_t base_ns) {
  namespace f = format;
  nlohmann::json j;
  j["t_ns"] = r.t_ns;
  j["tid"] = r.tid;
  switch (r.tag) {
    // One case per record of the registry (format/record_registry.h). NVML's process list is its
    // own: a process whose memory NVML could not tell is null, not 2^64 - 1.
#define VT_JSON_RECORD(S, R, clock, by, damaged)                                                          \
  case f::S::kTag:                                                                                    \
    put_record<f::S, f::R>(j, r, f::DamagedShown::damaged == f::DamagedShown::Partial,                \
                           f::RecordClock::clock == f::RecordClock::Chunk ? base_ns : 0);              \
    break;
#define VT_JSON_ROWS(S, R, RS, Row, count, max, by)                                                       \
  case f::S::kTag:                                                                                    \
    if constexpr (f::S::kTag != f::kTagGpuProcesses) put_rows<f::S, f::R, f::RS, f::Row>(j, r, &f::R::count, max); \
    else gpu_processes_json(j, r);                                                                    \
    break;
    VT_FOR_EACH_RECORD(VT_JSON_RECORD, VT_JSON_ROWS)
#undef VT_JSON_RECORD
#undef VT_JSON_ROWS
    default: j["record"] = "unknown"; j["tag"] = r.tag;
  }
  return j;
}

nlohmann::json threads_json(const std::vector<ThreadShare>& threads) {
  nlohmann::json out = nlohmann::json::array();
  for (const ThreadShare& t : threads) out.push_back({{"tid", t.tid}, {"name", t.name}, {"bytes", t.bytes}});
  return out;
}

nlohmann::json stack_json(const std::vector<Frame>& frames) {
  nlohmann::json out = nlohmann::json::array();
  for (const Frame& f : frames) {
    nlohmann::json j = {{"function", f.function}, {"file", f.file}, {"line", f.line},
                        {"module", f.module}, {"python", f.python}};
    if (!f.python) j["offset"] = f.offset;
    if (f.inlined) j["inlined"] = true;
    if (!f.python && is_machinery_frame(f)) j["machinery"] = true;  // what the user's view leaves out
    if (is_library_python_frame(f)) j["library"] = true;            // not the line a remedy names
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json process_json(const ProcessInfo& p) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceInfo& d : p.devices)
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"total_bytes", d.total_bytes}, {"uuid", d.uuid}});
  return {
      {"format_version", std::to_string(p.version_major) + "." + std::to_string(p.version_minor)},
      {"pid", p.pid},
      {"ppid", p.ppid},
      {"argv", p.argv},
      {"exe", p.exe},
      {"hostname", p.hostname},
      {"session", p.session},
      {"rank", p.rank},
      {"local_rank", p.local_rank},
      {"start_realtime_ns", p.start_realtime_ns},
      {"start_monotonic_ns", p.start_monotonic_ns},
      {"end_monotonic_ns", p.end_monotonic_ns},
      {"closed_cleanly", p.closed_cleanly},
      {"quick_exit", p.closed_cleanly && p.quick_exit},
      {"exit_status", p.closed_cleanly && p.quick_exit ? nlohmann::json(p.exit_status) : nlohmann::json(nullptr)},
      {"tracing_failed", p.tracing_failed},
      {"events_lost", p.events_lost},
      {"driver_version", p.driver_version},
      {"devices", devices},
  };
}

}  // namespace vt::analyzer
