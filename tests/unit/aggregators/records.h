// Synthetic records for the aggregator tests, as TraceReader hands them out: events (op, fields,
// result, device, stack) and metadata whose payloads are built here (region marks, NVML's process
// list). Times rise by 1 us per record unless set. Payloads live as long as the Records object.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "live_state.h"
#include "trace_format.h"
#include "trace_reader.h"

namespace synth_records {

using vt::HookId;
using vt::analyzer::Record;
namespace fmt = vt::format;

inline constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;

struct Records {
  uint64_t t = 1'000'000;
  int device = 0;
  uint64_t context = 0x10;
  std::deque<std::vector<uint8_t>> payloads;

  Record event(HookId op, uint64_t addr, uint64_t size, uint32_t stack = 1) {
    Record r;
    r.op = &vt::kOps[int(op)];
    r.tag = r.op->code;
    r.t_ns = (t += 1000);
    r.context = context;
    r.device = device;
    r.stack = stack;
    r.fields = fmt::kEvContext;
    if (addr) set_addr(r, addr);
    if (size) set_size(r, size);
    return r;
  }
  static void set_addr(Record& r, uint64_t v) { r.addr = v, r.fields |= fmt::kEvAddr; }
  static void set_size(Record& r, uint64_t v) { r.size = v, r.fields |= fmt::kEvSize; }
  static void set_aux(Record& r, uint64_t v) { r.aux = v, r.fields |= fmt::kEvAux; }
  static void set_aux2(Record& r, uint64_t v) { r.aux2 = v, r.fields |= fmt::kEvAux2; }

  Record alloc(uint64_t addr, uint64_t size, uint32_t stack = 1) { return event(HookId::cuMemAlloc_v2, addr, size, stack); }
  Record free(uint64_t addr) { return event(HookId::cuMemFree_v2, addr, 0, 0); }
  // A failed call: CUresult `result`, the device's free and total bytes at the failure.
  Record failed(HookId op, uint64_t size, int32_t result, uint64_t free_bytes, uint64_t total_bytes, uint32_t stack = 9) {
    Record r = event(op, 0, size, stack);
    r.result = result;
    r.fields |= fmt::kEvFailed;
    r.free_bytes = free_bytes;
    r.total_bytes = total_bytes;
    return r;
  }
  Record oom(uint64_t size, uint64_t free_bytes, uint64_t total_bytes, uint32_t stack = 9) {
    return failed(HookId::cuMemAlloc_v2, size, 2, free_bytes, total_bytes, stack);
  }
  // A context made on this device (cuCtxCreate_v4, rule 14) with the free bytes after it, and
  // before it unless `free_before` is 0 (a device's first context: nothing to ask before it).
  Record context_made(uint64_t ctx, uint64_t free_before, uint64_t free_after) {
    Record r = event(HookId::cuCtxCreate_v4, 0, 0, 1);
    set_addr(r, ctx);  // its CodeObject
    set_aux(r, free_after);
    set_aux2(r, uint64_t(device));
    if (free_before) set_size(r, free_before);
    return r;
  }
  // A stream-ordered allocation from `pool` (0: cuMemAllocAsync, the device's current pool).
  Record async(uint64_t addr, uint64_t size, uint64_t pool = 0, uint32_t stack = 1) {
    Record r = event(pool ? HookId::cuMemAllocFromPoolAsync : HookId::cuMemAllocAsync, addr, size, stack);
    if (pool) set_aux(r, pool);
    return r;
  }
  Record free_async(uint64_t addr) { return event(HookId::cuMemFreeAsync, addr, 0, 0); }
  // CUmemLocation as describe.h writes it: type << 32 | id (type 1: a device, 2: the host).
  static uint64_t device_location(int id) { return 1ull << 32 | uint32_t(id); }
  static uint64_t host_location() { return 2ull << 32; }
  Record pool_create(uint64_t pool, uint64_t location) {
    Record r = event(HookId::cuMemPoolCreate, 0, 0, 0);
    set_aux(r, pool);
    set_aux2(r, location);
    return r;
  }
  Record vmm_create(uint64_t handle, uint64_t size, uint64_t location, uint32_t stack = 1) {
    Record r = event(HookId::cuMemCreate, 0, size, stack);
    set_aux(r, handle);
    set_aux2(r, location);
    return r;
  }
  Record vmm_release(uint64_t handle) {
    Record r = event(HookId::cuMemRelease, 0, 0, 0);
    set_aux(r, handle);
    return r;
  }
  Record vmm_map(uint64_t va, uint64_t size, uint64_t handle) {
    Record r = event(HookId::cuMemMap, va, size, 0);
    set_aux(r, handle);
    set_aux2(r, 0);
    return r;
  }
  Record vmm_unmap(uint64_t va, uint64_t size) { return event(HookId::cuMemUnmap, va, size, 0); }
  Record reserve(uint64_t va, uint64_t size) { return event(HookId::cuMemAddressReserve, va, size, 0); }

  Record region(uint64_t kind, const std::string& name) {
    std::vector<uint8_t> p(2 * fmt::kMaxVarint + name.size());
    uint8_t* q = fmt::put_varint(fmt::put_varint(p.data(), kind), name.size());
    std::copy(name.begin(), name.end(), q);
    p.resize(size_t(q - p.data()) + name.size());
    return meta(fmt::kTagRegion, std::move(p));
  }
  Record begin(const std::string& name) { return region(fmt::kRegionBegin, name); }
  Record end(const std::string& name) { return region(fmt::kRegionEnd, name); }
  Record gpu_processes(int dev, const std::vector<vt::analyzer::GpuProcess>& procs) {
    std::vector<uint8_t> p(4096);
    uint8_t* q = fmt::put_varint(fmt::put_varint(p.data(), uint64_t(dev)), procs.size());
    for (const auto& g : procs) {
      q = fmt::put_varint(fmt::put_varint(fmt::put_varint(q, g.pid), g.bytes), g.name.size());
      q = std::copy(g.name.begin(), g.name.end(), q);
    }
    p.resize(size_t(q - p.data()));
    return meta(fmt::kTagGpuProcesses, std::move(p));
  }
  // PyTorch's block layer (0x93..0x95): a block handed out (size > 0) or taken back, with the
  // allocator's totals after it; its OOM report; the recorder's status.
  Record torch_block(int dev, uint64_t addr, int64_t size, uint64_t allocated, uint64_t reserved, uint32_t stack = 1) {
    return varints(fmt::kTagTorchBlock, {uint64_t(dev), addr, fmt::zigzag(size), allocated, reserved, stack});
  }
  Record torch_oom(int dev, int64_t size, uint64_t allocated, uint64_t reserved, uint64_t free_bytes,
                   uint64_t total_bytes, uint32_t stack = 9) {
    return varints(fmt::kTagTorchOom, {uint64_t(dev), fmt::zigzag(size), allocated, reserved, free_bytes, total_bytes, stack});
  }
  Record torch_status(bool on, const std::string& message) {
    std::vector<uint8_t> p(3 * fmt::kMaxVarint + message.size());
    uint8_t* q = fmt::put_varint(fmt::put_varint(fmt::put_varint(p.data(), on ? 1 : 2), 1), message.size());
    q = std::copy(message.begin(), message.end(), q);
    p.resize(size_t(q - p.data()));
    return meta(fmt::kTagTorchStatus, std::move(p));
  }
  Record varints(uint8_t tag, std::initializer_list<uint64_t> v) {
    std::vector<uint8_t> p(v.size() * fmt::kMaxVarint);
    uint8_t* q = p.data();
    for (uint64_t x : v) q = fmt::put_varint(q, x);
    p.resize(size_t(q - p.data()));
    return meta(tag, std::move(p));
  }
  Record meta(uint8_t tag, std::vector<uint8_t> payload) {
    payloads.push_back(std::move(payload));
    Record r;
    r.tag = tag;
    r.t_ns = (t += 1000);
    r.payload = payloads.back().data();
    r.payload_len = payloads.back().size();
    return r;
  }
};

}  // namespace synth_records
