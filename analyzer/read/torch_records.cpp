// See torch_records.h.
#include "torch_records.h"

#include <cstdint>

#include "pytorch_records.h"

namespace vt::analyzer {

namespace {

// Device indexes are a c10::DeviceIndex (int8_t): anything larger is damage.
bool device_ok(uint64_t d) { return d < 128; }

}  // namespace

// Each decodes with its schema (format/torch_records.h); a payload that ends early is damage.
bool decode_torch_block(const Record& r, TorchBlock* out) {
  if (!r.payload) return false;
  if (r.tag == format::kTagTorchAlloc) {
    format::TorchAllocRecord a;
    if (!format::decode<format::TorchAllocSchema>(r.payload, r.payload_len, &a) || a.size == 0 ||
        a.size > uint64_t(INT64_MAX) || a.requested > a.size)
      return false;
    *out = {int(a.device), a.address, int64_t(a.size), a.total_allocated, a.total_reserved, a.stack, a.requested, 0};
    return device_ok(a.device);
  }
  if (r.tag == format::kTagTorchStreamAlloc) {
    format::TorchStreamAllocRecord a;
    if (!format::decode<format::TorchStreamAllocSchema>(r.payload, r.payload_len, &a) || a.size == 0 ||
        a.size > uint64_t(INT64_MAX) || a.requested > a.size)
      return false;
    *out = {int(a.device), a.address, int64_t(a.size), a.total_allocated, a.total_reserved, a.stack, a.requested, a.stream};
    return device_ok(a.device);
  }
  format::TorchBlockRecord b;
  if (r.tag != format::kTagTorchBlock || !format::decode<format::TorchBlockSchema>(r.payload, r.payload_len, &b))
    return false;
  *out = {int(b.device), b.address, b.size, b.total_allocated, b.total_reserved, b.stack, 0, 0};
  return device_ok(b.device);
}

bool decode_torch_oom(const Record& r, TorchOom* out) {
  format::TorchOomRecord o;
  if (r.tag != format::kTagTorchOom || !r.payload || !format::decode<format::TorchOomSchema>(r.payload, r.payload_len, &o))
    return false;
  *out = {int(o.device), o.size, o.total_allocated, o.total_reserved, o.free_bytes, o.total_bytes, o.stack};
  return device_ok(o.device);
}

bool decode_torch_status(const Record& r, TorchStatus* out) {
  format::TorchStatusRecord s;
  if (r.tag != format::kTagTorchStatus || !r.payload ||
      !format::decode<format::TorchStatusSchema>(r.payload, r.payload_len, &s))
    return false;
  out->on = s.state == format::kTorchOn;
  out->forwarded = s.forwarded == 1;
  out->message = std::string(s.message);
  return s.state == format::kTorchOn || s.state == format::kTorchOff;
}

bool decode_torch_config(const Record& r, TorchConfig* out) {
  format::TorchConfigRecord c;
  if (r.tag != format::kTagTorchConfig || !r.payload ||
      !format::decode<format::TorchConfigSchema>(r.payload, r.payload_len, &c))
    return false;
  out->cuda_alloc_conf = std::string(c.cuda_alloc_conf);
  out->alloc_conf = std::string(c.alloc_conf);
  out->no_caching = std::string(c.no_caching);
  return true;
}

nlohmann::json torch_record_json(const Record& r, uint32_t* stack) {
  nlohmann::json j;
  *stack = 0;
  switch (r.tag) {
    case format::kTagTorchBlock:
    case format::kTagTorchAlloc:
    case format::kTagTorchStreamAlloc: {
      TorchBlock b;
      if (!decode_torch_block(r, &b)) return {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_block"}, {"damaged", true}};
      j = {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_block"}, {"device", b.device}, {"address", b.addr},
           {"size", b.size}, {"total_allocated", b.total_allocated}, {"total_reserved", b.total_reserved}};
      if (b.requested) j["requested"] = b.requested;
      if (b.stream) j["stream"] = b.stream;
      *stack = b.stack;
      return j;
    }
    case format::kTagTorchOom: {
      TorchOom o;
      if (!decode_torch_oom(r, &o)) return {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_oom"}, {"damaged", true}};
      j = {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_oom"}, {"device", o.device}, {"size", o.size},
           {"total_allocated", o.total_allocated}, {"total_reserved", o.total_reserved},
           {"free_bytes", o.device_free}, {"total_bytes", o.device_total}};
      *stack = o.stack;
      return j;
    }
    case format::kTagTorchStatus: {
      TorchStatus s;
      bool ok = decode_torch_status(r, &s);
      j = {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_status"}};
      if (!ok) j["damaged"] = true;
      else j.update({{"state", s.on ? "on" : "off"}, {"forwarded", s.forwarded}, {"message", s.message}});
      return j;
    }
    case format::kTagTorchConfig: {
      TorchConfig c;
      bool ok = decode_torch_config(r, &c);
      j = {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_config"}};
      if (!ok) j["damaged"] = true;
      else j.update({{"PYTORCH_CUDA_ALLOC_CONF", c.cuda_alloc_conf}, {"PYTORCH_ALLOC_CONF", c.alloc_conf},
                     {"PYTORCH_NO_CUDA_MEMORY_CACHING", c.no_caching}});
      return j;
    }
    default: return nullptr;
  }
}

}  // namespace vt::analyzer
