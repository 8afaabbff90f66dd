// The record path: activity buffers built from CUPTI's own structs go through the production
// decoder (Encoder::decode_buffer, with CUPTI's iterator contract) into a real trace, and come
// back through TraceReader and the analyzer's decoders with every field and time intact.
#include <catch2/catch.hpp>

#include <cstddef>

#include "activity_fixture.h"
#include "activity_format.h"
#include "recorder.h"
#include "synthetic_buffer.h"
#include "trace_fixture.h"

using vt::analyzer::ActivityIndex;
namespace fmt = vt::format;

namespace {

constexpr int64_t kOffset = 1'700'000'000'000'000'000;  // CUPTI's wall clock vs monotonic, about

vt::Event opening_alloc(uint64_t t) {
  vt::Event e;
  e.set_op(vt::HookId::cuMemAlloc_v2);
  e.t_ns = t;
  e.device = 0;
  e.set_addr(0x7f0000000000ull);
  e.set_size(1 << 20);
  return e;
}

struct Times {
  uint64_t k1s, k1e, k2s, k2e;
};

}  // namespace

TEST_CASE("synthetic CUPTI buffers become trace records that read back exactly") {
  std::string path = fixture::temp_dir() + "/enc.trace";
  // Child: open the trace with one event, then decode one buffer of every kind we record.
  int st = fixture::write_trace(path, [] {
    uint64_t t0 = vt::now_ns();
    vt::record(opening_alloc(t0));
    vt::cupti::ClockAlign clock;
    actfix::set_offset(&clock, kOffset);
    vt::cupti::NameTable names;
    vt::cupti::Encoder enc(actfix::trace_base(), &clock, &names, {actfix::trace_sink_write, nullptr});
    alignas(8) static uint8_t buf[1 << 16];
    synth::Builder b{buf, sizeof buf};
    uint64_t c = t0 + uint64_t(kOffset);  // CUPTI's clock at t0
    b.kernel("_Z9fake_gemmPfS_S_i", c + 1000, c + 5000, 7, 11);
    b.kernel("_Z9fake_gemmPfS_S_i", c + 6000, c + 9000, 8, 12);
    b.kernel("_Z10unfinishedv", 0, 0, 7, 13);  // forced flush before it ended: skipped, counted
    b.memcpy_rec(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, c + 100, c + 900, 7);
    b.memset_rec(0xab, 4096, c + 950, c + 990, 7);
    b.memory(true, 0x7f0000000000ull, 1 << 20, c + 50);
    b.memory(false, 0x7f0000000000ull, 1 << 20, c + 20000);
    b.pool(0x5000, 2 << 20, c + 10);
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, c + 500, 42, "forward");
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, c + 9500, 42, nullptr);
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 2, c + 700, 42, "checkpoint");
    enc.decode_buffer(buf, b.len, synth::next_record);
    if (enc.stats.incomplete != 1 || enc.stats.ignored != 0) _exit(3);
  });
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);

  actfix::Loaded l = actfix::load(path);
  CHECK(l.problems.empty());
  REQUIRE(l.events.size() == 1);
  const uint64_t t0 = l.events[0].t_ns;
  const ActivityIndex& ix = *l.index;

  REQUIRE(ix.kernels().size() == 2);
  const auto& k = ix.kernels()[0];
  CHECK(k.start_ns == t0 + 1000);  // CUPTI time - offset: back on the trace's clock, to the ns
  CHECK(k.end_ns == t0 + 5000);
  CHECK(k.stream == 7);
  CHECK(k.correlation == 11);
  CHECK(k.context == 1);
  CHECK(k.grid[0] == 128);
  CHECK(k.grid[1] == 2);
  CHECK(k.block[0] == 256);
  CHECK(k.registers == 32);
  CHECK(k.static_shared == 1024);
  CHECK(k.dynamic_shared == 4096);
  CHECK(ix.kernel_name(k.name_id) == "_Z9fake_gemmPfS_S_i");
  CHECK(ix.display_name(k.name_id) == "fake_gemm(float*, float*, float*, int)");
  CHECK(ix.kernels()[1].name_id == k.name_id);
  CHECK(l.name_records == 1);  // one name record for both launches

  REQUIRE(ix.copies().size() == 2);
  const auto& cp = ix.copies()[0];
  CHECK_FALSE(cp.is_memset);
  CHECK(cp.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(std::string(vt::analyzer::memcpy_kind_name(cp.copy_kind)) == "HtoD");
  CHECK(cp.bytes == (1u << 20));
  CHECK(cp.start_ns == t0 + 100);
  CHECK(cp.end_ns == t0 + 900);
  CHECK(cp.flags == CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
  const auto& ms = ix.copies()[1];
  CHECK(ms.is_memset);
  CHECK(ms.value == 0xab);
  CHECK(ms.bytes == 4096);
  CHECK(ms.memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);

  REQUIRE(ix.cupti_memory().size() == 2);
  CHECK_FALSE(ix.cupti_memory()[0].release());
  CHECK(ix.cupti_memory()[0].address == 0x7f0000000000ull);
  CHECK(ix.cupti_memory()[0].bytes == (1u << 20));
  CHECK(ix.cupti_memory()[0].t_ns == t0 + 50);
  CHECK(std::string(vt::analyzer::cupti_memory_kind_name(ix.cupti_memory()[0].memory_kind)) == "device");
  CHECK(ix.cupti_memory()[1].release());

  REQUIRE(ix.pools().size() == 1);
  CHECK(ix.pools()[0].address == 0x5000);
  CHECK(ix.pools()[0].size == (2u << 20));
  CHECK(ix.pools()[0].operation == 1);
  CHECK(ix.pools()[0].t_ns == t0 + 10);

  REQUIRE(ix.nvtx_ranges().size() == 1);
  const auto& r = ix.nvtx_ranges()[0];
  CHECK(r.name == "forward");
  CHECK(r.domain == "app");
  CHECK(r.start_ns == t0 + 500);
  CHECK(r.end_ns == t0 + 9500);
  CHECK_FALSE(r.open);
  CHECK(r.thread == 42);
  REQUIRE(ix.nvtx_instants().size() == 1);
  CHECK(ix.nvtx_instants()[0].name == "checkpoint");

  // The status record the opening thread wrote (kernels off in reader fixtures).
  auto rs = ix.recorder();
  CHECK(rs.seen);
  CHECK(rs.unavailable);
  CHECK(rs.reason == fmt::kCuptiWhyDisabled);
}

TEST_CASE("each distinct kernel name is written once, and a reused name pointer is noticed") {
  actfix::MemorySink sink;
  vt::cupti::ClockAlign clock;
  actfix::set_offset(&clock, 0);
  vt::cupti::NameTable names;
  vt::cupti::Encoder enc(0, &clock, &names, sink.sink());
  alignas(8) static uint8_t buf[1 << 18];
  char reused[32] = "_Z1av";
  synth::Builder b{buf, sizeof buf};
  for (int i = 0; i < 300; ++i) b.kernel(i % 2 ? "_Z3foov" : "_Z3barv", 1000 + i * 10, 1005 + i * 10, 1, i);
  b.kernel(reused, 5000, 5001, 1, 1);
  enc.decode_buffer(buf, b.len, synth::next_record);
  synth::Builder b2{buf, sizeof buf};
  strcpy(reused, "_Z1bv");  // same pointer, another name (a module unloaded and another loaded)
  b2.kernel(reused, 6000, 6001, 1, 2);
  enc.decode_buffer(buf, b2.len, synth::next_record);

  size_t name_records = 0, kernels = 0;
  for (const auto& [tag, bytes] : sink.records) {
    name_records += tag == fmt::kTagKernelName;
    kernels += tag == fmt::kTagKernel;
  }
  CHECK(kernels == 302);
  CHECK(name_records == 4);
  ActivityIndex ix(0);
  for (const auto& r : sink.as_records()) ix.add(r);
  ix.finish(10000);
  CHECK(ix.kernel_name(ix.kernels().back().name_id) == "_Z1bv");
  CHECK(ix.kernel_name(ix.kernels()[ix.kernels().size() - 2].name_id) == "_Z1av");
  CHECK(enc.stats.written == 306);
}

TEST_CASE("a truncated or foreign buffer ends decoding without reading past it") {
  actfix::MemorySink sink;
  vt::cupti::ClockAlign clock;
  actfix::set_offset(&clock, 0);
  vt::cupti::NameTable names;
  vt::cupti::Encoder enc(0, &clock, &names, sink.sink());
  alignas(8) static uint8_t buf[4096];
  synth::Builder b{buf, sizeof buf};
  b.kernel("_Z1kv", 10, 20, 1, 1);
  b.kernel("_Z1kv", 30, 40, 1, 2);
  enc.decode_buffer(buf, b.len - 8, synth::next_record);  // the second record is cut
  CHECK(enc.stats.written == 2);                          // name + first kernel
  CUpti_Activity* odd = reinterpret_cast<CUpti_Activity*>(buf);
  odd->kind = CUPTI_ACTIVITY_KIND_OPENACC_DATA;  // a kind the iterator cannot size
  enc.decode_buffer(buf, b.len, synth::next_record);
  CHECK(enc.stats.written == 2);
}

// Only fields that existed in the CUDA 12.0 struct versions are read, so an older libcupti
// (PyTorch wheels for CUDA 12) decodes with the same code.
#define SAME_OFFSET(old_t, new_t, field) static_assert(offsetof(old_t, field) == offsetof(new_t, field), #field)
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, start);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, end);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, deviceId);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, contextId);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, streamId);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, gridX);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, blockZ);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, staticSharedMemory);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, dynamicSharedMemory);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, registersPerThread);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, correlationId);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, name);
SAME_OFFSET(CUpti_ActivityKernel9, CUpti_ActivityKernel10, graphId);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, copyKind);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, bytes);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, start);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, end);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, streamId);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, correlationId);
SAME_OFFSET(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6, graphId);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, address);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, bytes);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, timestamp);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, streamId);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, isAsync);
SAME_OFFSET(CUpti_ActivityMemory3, CUpti_ActivityMemory4, memoryPoolConfig);
SAME_OFFSET(CUpti_ActivityMemoryPool2, CUpti_ActivityMemoryPool3, address);
SAME_OFFSET(CUpti_ActivityMemoryPool2, CUpti_ActivityMemoryPool3, timestamp);
SAME_OFFSET(CUpti_ActivityMemoryPool2, CUpti_ActivityMemoryPool3, utilizedSize);
