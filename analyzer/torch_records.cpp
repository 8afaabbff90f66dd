// See torch_records.h.
#include "torch_records.h"

namespace vt::analyzer {

namespace {

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  uint64_t v() {
    uint64_t x = 0;
    const uint8_t* q = ok ? format::get_varint(p, end, &x) : nullptr;
    if (!q) {
      ok = false;
      return 0;
    }
    p = q;
    return x;
  }
  std::string s(size_t cap) {
    uint64_t n = v();
    if (!ok || n > size_t(end - p) || n > cap) {
      ok = false;
      return {};
    }
    std::string out(reinterpret_cast<const char*>(p), size_t(n));
    p += n;
    return out;
  }
};

Cursor cursor(const Record& r) { return Cursor{r.payload, r.payload + r.payload_len}; }

// Device indexes are a c10::DeviceIndex (int8_t): anything larger is damage.
bool device_ok(uint64_t d) { return d < 128; }

}  // namespace

bool decode_torch_block(const Record& r, TorchBlock* out) {
  if (r.tag != format::kTagTorchBlock || !r.payload) return false;
  Cursor c = cursor(r);
  uint64_t dev = c.v();
  out->addr = c.v();
  out->size = format::unzigzag(c.v());
  out->total_allocated = c.v();
  out->total_reserved = c.v();
  out->stack = uint32_t(c.v());
  out->device = int(dev);
  return c.ok && device_ok(dev);
}

bool decode_torch_oom(const Record& r, TorchOom* out) {
  if (r.tag != format::kTagTorchOom || !r.payload) return false;
  Cursor c = cursor(r);
  uint64_t dev = c.v();
  out->size = format::unzigzag(c.v());
  out->total_allocated = c.v();
  out->total_reserved = c.v();
  out->device_free = c.v();
  out->device_total = c.v();
  out->stack = uint32_t(c.v());
  out->device = int(dev);
  return c.ok && device_ok(dev);
}

bool decode_torch_status(const Record& r, TorchStatus* out) {
  if (r.tag != format::kTagTorchStatus || !r.payload) return false;
  Cursor c = cursor(r);
  uint64_t state = c.v();
  out->forwarded = c.v() == 1;
  out->message = c.s(4096);
  out->on = state == format::kTorchOn;
  return c.ok && (state == format::kTorchOn || state == format::kTorchOff);
}

bool decode_torch_config(const Record& r, TorchConfig* out) {
  if (r.tag != format::kTagTorchConfig || !r.payload) return false;
  Cursor c = cursor(r);
  out->cuda_alloc_conf = c.s(4096);
  out->alloc_conf = c.s(4096);
  out->no_caching = c.s(4096);
  return c.ok;
}

nlohmann::json torch_record_json(const Record& r, uint32_t* stack) {
  nlohmann::json j;
  *stack = 0;
  switch (r.tag) {
    case format::kTagTorchBlock: {
      TorchBlock b;
      if (!decode_torch_block(r, &b)) return {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_block"}, {"damaged", true}};
      j = {{"t_ns", r.t_ns}, {"tid", r.tid}, {"op", "torch_block"}, {"device", b.device}, {"address", b.addr},
           {"size", b.size}, {"total_allocated", b.total_allocated}, {"total_reserved", b.total_reserved}};
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
