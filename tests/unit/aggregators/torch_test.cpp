// The PyTorch aggregator on synthetic records: memory_stats() figures (allocated, reserved,
// inactive split, largest free block) over cudaMalloc segments and expandable segments, the
// checks against the driver's view (each turns the figures off with a reason), the peak's view,
// fragmentation at its worst moment, and PyTorch's OOM taking the place of its driver failures.
#include <catch2/catch.hpp>

#include "aggregators/torch_blocks.h"
#include "torch_verdict.h"
#include "records.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

constexpr uint64_t A = 0x7f0000000000;

struct Rig {
  Records rec;
  LiveState live;
  TorchAggregator torch{4242, 10, 512};
  uint64_t allocated = 0, reserved = 0;
  void feed(const Record& r) {
    if (is_torch_record(r.tag)) {
      torch.on_record(r, live);
    } else if (r.tag == vt::format::kTagRegion) {
      RegionMark m;
      REQUIRE(decode_region(r, &m));
      torch.on_mark(r.t_ns, m);
    } else {
      live.apply(r);
      torch.after(r);
    }
  }
  // A segment (PyTorch's reserved grows with it), then blocks in it with consistent totals.
  void segment(uint64_t addr, uint64_t size) {
    feed(rec.alloc(addr, size, 7));
    reserved += size;
  }
  void block(uint64_t addr, int64_t size, uint32_t stack = 1) {
    allocated += size;
    feed(rec.torch_block(0, addr, size, allocated, reserved, stack));
  }
  TraceReport finish() {
    TraceReport rep;
    rep.last_t_ns = rec.t;  // (AnalysisPass::finish sets it first)
    torch.finish(&rep);
    return rep;
  }
};

// `steps` training steps from A: the forward line (stack 3) makes temporaries and one 512 KiB
// output it keeps; another line (stack 4, the loss) a temporary; all temporaries go back at the
// end of the step. Returns where the next kept output would go.
uint64_t keep_one_per_step(Rig& g, int steps) {
  uint64_t kept_at = A;
  const uint64_t temp_at = A + 2 * GiB;
  for (int step = 0; step < steps; ++step) {
    for (int k = 0; k < 4; ++k) g.block(temp_at + uint64_t(k) * MiB, int64_t(MiB), 3);
    g.block(kept_at, 512 * 1024, 3);
    kept_at += 512 * 1024;
    g.block(temp_at + 8 * MiB, int64_t(MiB), 4);
    for (int k = 0; k < 4; ++k) g.block(temp_at + uint64_t(k) * MiB, -int64_t(MiB));
    g.block(temp_at + 8 * MiB, -int64_t(MiB));
  }
  return kept_at;
}

}  // namespace

TEST_CASE("torch aggregator: allocated, reserved, inactive split and the largest free block") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  g.block(A + 4 * MiB, 4 * MiB);
  g.block(A + 8 * MiB, 4 * MiB);
  g.block(A + 4 * MiB, -int64_t(4 * MiB));  // a hole in a segment that still holds blocks
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.layer == "on");
  REQUIRE(rep.torch.devices.size() == 1);
  const TorchDevice& d = rep.torch.devices[0];
  CHECK(d.end_allocated == 8 * MiB);
  CHECK(d.end_reserved == 20 * MiB);
  CHECK(d.peak_allocated == 12 * MiB);
  // The view at the peak: 3 blocks live, one 8 MiB free tail, no inactive split beyond it.
  CHECK(d.peak.figures.allocated == 12 * MiB);
  CHECK(d.peak.figures.inactive_split == 8 * MiB);
  CHECK(d.peak.figures.largest_free_block == 8 * MiB);
  CHECK(d.peak.figures.blocks == 3);
  REQUIRE(d.peak.segments.size() == 1);
  CHECK(d.peak.segments[0].allocated == 12 * MiB);
}

TEST_CASE("torch aggregator: figures at region marks, and a segment with no live block is no inactive split") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  g.block(A + 4 * MiB, 4 * MiB);
  g.block(A + 8 * MiB, 4 * MiB);
  g.block(A + 4 * MiB, -int64_t(4 * MiB));
  g.feed(g.rec.begin("holes"));
  g.block(A, -int64_t(4 * MiB));
  g.block(A + 8 * MiB, -int64_t(4 * MiB));  // all free: one block again, cached
  g.feed(g.rec.begin("cached"));
  g.segment(A + 64 * MiB, 2 * MiB);
  g.block(A + 64 * MiB, 512);
  g.feed(g.rec.begin("small"));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.marks.size() == 3);
  const TorchFigures& holes = rep.torch.marks[0].figures;
  CHECK(holes.allocated == 8 * MiB);
  CHECK(holes.inactive_split == 12 * MiB);
  CHECK(holes.largest_free_block == 8 * MiB);
  CHECK(holes.reserved_unallocated() == 12 * MiB);
  const TorchFigures& cached = rep.torch.marks[1].figures;
  CHECK(cached.allocated == 0);
  CHECK(cached.inactive_split == 0);
  CHECK(cached.largest_free_block == 20 * MiB);
  CHECK(cached.reserved_unallocated() == 20 * MiB);
  const TorchFigures& small = rep.torch.marks[2].figures;
  CHECK(small.reserved == 22 * MiB);
  CHECK(small.inactive_split == 2 * MiB - 512);
  CHECK(small.segments == 2);
}

TEST_CASE("torch aggregator: a segment that never held a block is not PyTorch's") {
  Rig g;
  g.feed(g.rec.alloc(A + 512 * MiB, 64 * MiB, 3));  // NCCL, say: no block ever lands there
  g.segment(A, 20 * MiB);
  g.block(A, 1 * MiB);
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.layer == "on");
  CHECK(rep.torch.devices[0].end_reserved == 20 * MiB);
}

TEST_CASE("torch aggregator: expandable segments: mapped ranges merge, blocks cross them, no inactive split") {
  Rig g;
  const uint64_t va = 0x7e0000000000;
  g.feed(g.rec.reserve(va, 1 * GiB));
  g.feed(g.rec.vmm_create(1, 20 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(va, 20 * MiB, 1));
  g.reserved = 20 * MiB;
  g.block(va, 16 * MiB);
  g.feed(g.rec.vmm_create(2, 20 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(va + 20 * MiB, 20 * MiB, 2));
  g.reserved = 40 * MiB;
  g.block(va + 16 * MiB, 8 * MiB);  // across the two mappings
  g.block(va + 30 * MiB, 2 * MiB);
  g.feed(g.rec.begin("grown"));
  g.block(va, -int64_t(16 * MiB));
  g.feed(g.rec.begin("freed"));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.layer == "on");
  CHECK(rep.torch.expandable_seen);
  REQUIRE(rep.torch.marks.size() == 2);
  const TorchFigures& grown = rep.torch.marks[0].figures;
  CHECK(grown.reserved == 40 * MiB);
  CHECK(grown.allocated == 26 * MiB);
  CHECK(grown.inactive_split == 0);  // PyTorch does not count expandable segments there
  CHECK(grown.largest_free_block == 8 * MiB);  // from 32 MiB to the end of the second mapping
  CHECK(grown.segments == 1);
  const TorchFigures& freed = rep.torch.marks[1].figures;
  CHECK(freed.largest_free_block == 16 * MiB);
  CHECK(freed.reserved_unallocated() == 30 * MiB);
}

TEST_CASE("torch aggregator: unmapping free pages of an expandable segment shrinks reserved") {
  Rig g;
  const uint64_t va = 0x7e0000000000;
  g.feed(g.rec.reserve(va, 1 * GiB));
  g.feed(g.rec.vmm_map(va, 20 * MiB, 1));
  g.feed(g.rec.vmm_map(va + 20 * MiB, 20 * MiB, 2));
  g.reserved = 40 * MiB;
  g.block(va, 4 * MiB);
  g.feed(g.rec.vmm_unmap(va + 20 * MiB, 20 * MiB));
  g.reserved = 20 * MiB;
  g.block(va + 4 * MiB, 2 * MiB);
  g.feed(g.rec.begin("after"));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.layer == "on");
  const TorchFigures& f = rep.torch.marks[0].figures;
  CHECK(f.reserved == 20 * MiB);
  CHECK(f.largest_free_block == 14 * MiB);
}

TEST_CASE("torch aggregator: records that disagree with the driver's view turn the figures off, saying how") {
  SECTION("total_reserved") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.feed(g.rec.torch_block(0, A, 4 * MiB, 4 * MiB, 22 * MiB));
    TraceReport rep = g.finish();
    CHECK(rep.torch.layer == "off");
    CHECK(rep.torch.layer_detail.find("total_reserved says 23068672") != std::string::npos);
    CHECK(rep.torch.devices.empty());
  }
  SECTION("total_allocated") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.feed(g.rec.torch_block(0, A, 4 * MiB, 5 * MiB, 20 * MiB));
    CHECK(g.finish().torch.layer_detail.find("total_allocated says") != std::string::npos);
  }
  SECTION("a block in no segment") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.block(A + 18 * MiB, 4 * MiB);  // runs past the segment's end
    CHECK(g.finish().torch.layer_detail.find("lies in no segment") != std::string::npos);
  }
  SECTION("overlapping blocks") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.block(A, 4 * MiB);
    g.block(A + 2 * MiB, 4 * MiB);
    CHECK(g.finish().torch.layer_detail.find("overlaps a live block") != std::string::npos);
  }
  SECTION("a free of a block never handed out") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.block(A, 4 * MiB);
    g.block(A + 4 * MiB, -int64_t(4 * MiB));
    CHECK(g.finish().torch.layer_detail.find("without being handed out") != std::string::npos);
  }
  SECTION("a segment freed under a live block") {
    Rig g;
    g.segment(A, 20 * MiB);
    g.block(A, 4 * MiB);
    g.feed(g.rec.free(A));
    CHECK(g.finish().torch.layer_detail.find("while it held a live block") != std::string::npos);
  }
  SECTION("the recorder's own verdict") {
    Rig g;
    g.feed(g.rec.torch_status(true, "forwarding to /x/libc10.so"));
    g.segment(A, 20 * MiB);
    g.block(A, 4 * MiB);
    g.feed(g.rec.torch_status(false, "a block of 513 bytes on device 0, not a non-zero multiple of 512"));
    TraceReport rep = g.finish();
    CHECK(rep.torch.layer == "off");
    CHECK(rep.torch.layer_detail.find("513 bytes") != std::string::npos);
  }
}

TEST_CASE("torch aggregator: the peak's view is the peak's, fragmentation is reported at its worst") {
  Rig g;
  g.segment(A, 20 * MiB);
  for (int i = 0; i < 5; ++i) g.block(A + uint64_t(i) * 4 * MiB, 4 * MiB, uint32_t(10 + i));
  g.block(A + 4 * MiB, -int64_t(4 * MiB));
  g.block(A + 12 * MiB, -int64_t(4 * MiB));  // two 4 MiB holes: 8 MiB free, largest 4 MiB
  g.segment(A + 20 * MiB, 6 * MiB);
  g.block(A + 20 * MiB, 6 * MiB, 20);  // 6 MiB fits no hole: a new segment, the moment is judged
  g.block(A + 20 * MiB, -int64_t(6 * MiB));
  for (uint64_t at : {0, 8, 16}) g.block(A + at * MiB, -int64_t(4 * MiB));  // all free at the end
  TraceReport rep = g.finish();
  const TorchDevice& d = rep.torch.devices[0];
  CHECK(d.peak_allocated == 20 * MiB);
  CHECK(d.peak.figures.allocated == 20 * MiB);
  CHECK(d.peak.holders.size() == 5);
  CHECK(d.end_allocated == 0);
  // Worst: 3 blocks live, holes of 4 + 4 MiB: 8 MiB inactive split, when the 6 MiB request
  // could use neither.
  CHECK(d.worst_fragmentation.inactive_split == 8 * MiB);
  CHECK(d.worst_fragmentation.allocated == 12 * MiB);
  CHECK(d.worst_fragmentation.reserved == 20 * MiB);
  CHECK(d.worst_fragmentation.largest_free_block == 4 * MiB);
  CHECK(d.worst_fragmentation_ratio == Approx(0.4));
}

TEST_CASE("torch aggregator: frees alone never set fragmentation's worst (the interpreter's teardown)") {
  Rig g;
  g.segment(A, 20 * MiB);
  for (int i = 0; i < 5; ++i) g.block(A + uint64_t(i) * 4 * MiB, 4 * MiB, uint32_t(10 + i));
  for (uint64_t at : {0, 4, 12, 16}) g.block(A + at * MiB, -int64_t(4 * MiB));  // 16 MiB inactive split, no request
  TraceReport rep = g.finish();
  const TorchDevice& d = rep.torch.devices[0];
  CHECK(d.worst_fragmentation.inactive_split == 0);
  CHECK(d.worst_fragmentation_t_ns == 0);
}

TEST_CASE("torch aggregator: marks carry the peaks, the allocation retries and the OOMs so far") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 8 * MiB);
  g.block(A, -int64_t(8 * MiB));
  // A request whose first cudaMalloc failed, the cache flushed, the retry worked: one retry.
  Record failed = g.rec.oom(64 * MiB, 2 * MiB, 1 * GiB);
  g.torch.on_failed(failed);
  g.segment(A + 32 * MiB, 64 * MiB);
  g.block(A + 32 * MiB, 64 * MiB);
  // A request that failed twice (first attempt, retry) and raised: one more retry, one OOM.
  g.torch.on_failed(failed);
  g.torch.on_failed(failed);
  g.feed(g.rec.torch_oom(0, 128 * MiB, 64 * MiB, 84 * MiB, 2 * MiB, 1 * GiB));
  // A memory fraction reached: no driver call failed, PyTorch still retried once.
  g.feed(g.rec.torch_oom(0, 128 * MiB, 64 * MiB, 84 * MiB, 2 * MiB, 1 * GiB));
  g.feed(g.rec.begin("after"));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.marks.size() == 1);
  const TorchMark& m = rep.torch.marks[0];
  CHECK(m.figures.allocated == 64 * MiB);
  CHECK(m.peak_allocated == 64 * MiB);
  CHECK(m.peak_reserved == 84 * MiB);
  CHECK(m.alloc_retries == 3);
  CHECK(m.ooms == 2);
}

TEST_CASE("torch aggregator: --at takes every segment and live block with its call site") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB, 5);
  g.block(A + 8 * MiB, 2 * MiB, 6);
  g.torch.take_live_at();
  g.block(A + 12 * MiB, 2 * MiB, 7);  // after the instant
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.live_at_taken);
  REQUIRE(rep.torch.live_at.size() == 1);
  const TorchLiveDevice& d = rep.torch.live_at[0];
  CHECK(d.figures.allocated == 6 * MiB);
  REQUIRE(d.segments.size() == 1);
  CHECK(d.segments[0].address == A);
  CHECK(d.segments[0].size == 20 * MiB);
  REQUIRE(d.segments[0].blocks.size() == 2);
  CHECK(d.segments[0].blocks[0].address == A);
  CHECK(d.segments[0].blocks[0].stack_id == 5);
  CHECK(d.segments[0].blocks[1].size == 2 * MiB);
}

TEST_CASE("torch aggregator: at exit, PyTorch's segments and its tensors for the leaks") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB, 5);
  g.segment(A + 20 * MiB, 20 * MiB);
  g.block(A + 20 * MiB, 2 * MiB, 6);
  g.feed(g.rec.alloc(A + 64 * MiB, 8 * MiB, 3));  // another library's: never PyTorch's
  g.block(A + 20 * MiB, -int64_t(2 * MiB));
  AllocatorAtExit x = g.torch.at_exit(g.live);
  REQUIRE(x.known);
  CHECK(x.reserved == 40 * MiB);
  CHECK(x.segment_count == 2);
  CHECK(x.allocated == 4 * MiB);
  REQUIRE(x.segments.size() == 1);  // one site (7) for both segments
  CHECK(x.segments[0].key.stack == 7);
  CHECK(x.segments[0].b.bytes == 40 * MiB);
  CHECK(x.segments[0].b.count == 2);
  uint64_t tensors = 0;
  for (const SiteTable::Row& r : x.tensors) tensors += r.b.bytes;
  CHECK(tensors == 4 * MiB);
}

TEST_CASE("torch aggregator: PyTorch's OOM takes the place of its driver failures") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  TraceReport rep;
  // The request's two failed cudaMallocs (before and after the cache flush), then PyTorch's report.
  OomReport first, retry, unrelated;
  first.device = retry.device = 0;
  unrelated.device = 1;
  Record f1 = g.rec.oom(24 * MiB, 2 * MiB, 1 * GiB);
  Record f2 = g.rec.oom(24 * MiB, 2 * MiB, 1 * GiB);
  first.t_ns = f1.t_ns;
  retry.t_ns = f2.t_ns;
  unrelated.t_ns = f2.t_ns;
  g.feed(g.rec.torch_oom(0, 24 * MiB, 4 * MiB, 20 * MiB, 2 * MiB, 1 * GiB));
  rep.ooms = {first, retry, unrelated};
  g.torch.finish(&rep);
  REQUIRE(rep.ooms.size() == 2);
  const OomReport& o = rep.ooms[0].device == 0 ? rep.ooms[0] : rep.ooms[1];
  REQUIRE(o.torch);
  CHECK(o.t_ns == retry.t_ns);
  CHECK(o.torch_info.driver_attempts == 2);
  CHECK(o.torch_info.block_size == 24 * MiB);
  CHECK(o.torch_info.tried_to_allocate == 24 * MiB);
  CHECK(o.torch_info.allocated == 4 * MiB);
  CHECK(o.torch_info.view.figures.largest_free_block == 16 * MiB);
}

TEST_CASE("torch aggregator: an OOM with no failed driver call is one of its own") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  g.feed(g.rec.torch_oom(0, 512, 4 * MiB, 20 * MiB, 100 * MiB, 1 * GiB));  // a memory fraction reached
  TraceReport rep;
  g.torch.finish(&rep);
  REQUIRE(rep.ooms.size() == 1);
  CHECK(rep.ooms[0].op == "PyTorch caching allocator");
  CHECK(rep.ooms[0].torch);
  CHECK(rep.ooms[0].torch_info.tried_to_allocate == 2 * MiB);  // a small block: a 2 MiB segment
  CHECK(rep.ooms[0].torch_info.driver_attempts == 0);
}

TEST_CASE("torch aggregator: a trace without PyTorch records leaves no torch section") {
  Rig g;
  g.feed(g.rec.alloc(A, 20 * MiB));
  g.feed(g.rec.free(A));
  TraceReport rep = g.finish();
  CHECK_FALSE(rep.torch.present);
  CHECK(rep.torch.layer.empty());
}

TEST_CASE("torch aggregator: a failed cudaMalloc PyTorch recovered from (cache flush) is no OOM") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  TraceReport rep;
  OomReport flushed, raised;
  flushed.device = raised.device = 0;
  flushed.t_ns = 100;
  raised.t_ns = 200;
  rep.ooms = {flushed, raised};
  CacheFlush f;
  f.t_ns = 100;
  f.retry_succeeded = true;
  rep.fragmentation.cache_flushes.push_back(f);
  g.torch.finish(&rep);
  REQUIRE(rep.ooms.size() == 1);  // the driver failure nothing raised for is gone; the other stays
  CHECK(rep.ooms[0].t_ns == 200);
}

TEST_CASE("torch aggregator: NVML's list as PyTorch read it goes with its OOM") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  g.feed(g.rec.torch_oom(0, 512, 4 * MiB, 20 * MiB, 100 * MiB, 1 * GiB));  // no driver failure
  GpuProcessList list;
  list.device = 0;
  list.processes = {{77, "other", 300 * MiB}, {4242, "me", 600 * MiB}};
  g.torch.on_gpu_processes(list, g.rec.t);
  TraceReport rep;
  g.torch.finish(&rep);
  REQUIRE(rep.ooms.size() == 1);
  const OomReport& o = rep.ooms[0];
  CHECK(o.nvml);
  CHECK(o.nvml_self);
  CHECK(o.nvml_self_bytes == 600 * MiB);
  REQUIRE(o.other_processes.size() == 1);
  CHECK(o.other_processes[0].pid == 77);
  CHECK(torch_oom_message(o.torch_info, o.nvml_rows, 4242) ==
        "Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 1024.00 MiB of which 100.00 MiB is free. Process 77 has "
        "300.00 MiB memory in use. Including non-PyTorch memory, this process has 600.00 MiB memory in use. Of the "
        "allocated memory 4.00 MiB is allocated by PyTorch, and 16.00 MiB is reserved by PyTorch but unallocated.");
}

TEST_CASE("torch aggregator: --at lists two adjacent expandable segments as two") {
  Rig g;
  const uint64_t va = 0x7e0000000000;
  g.feed(g.rec.reserve(va, 20 * MiB));
  g.feed(g.rec.reserve(va + 20 * MiB, 20 * MiB));  // another reservation, right after the first
  g.feed(g.rec.vmm_create(1, 20 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(va, 20 * MiB, 1));
  g.reserved = 20 * MiB;
  g.block(va, 4 * MiB, 5);
  g.feed(g.rec.vmm_create(2, 20 * MiB, Records::device_location(0)));
  g.feed(g.rec.vmm_map(va + 20 * MiB, 20 * MiB, 2));
  g.reserved = 40 * MiB;
  g.block(va + 20 * MiB, 4 * MiB, 6);
  g.torch.take_live_at();
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.live_at.size() == 1);
  const std::vector<TorchLiveSegment>& s = rep.torch.live_at[0].segments;
  REQUIRE(s.size() == 2);
  CHECK(s[0].address == va);
  CHECK(s[0].size == 20 * MiB);
  CHECK(s[0].blocks.size() == 1);
  CHECK(s[1].address == va + 20 * MiB);
  CHECK(s[1].blocks.size() == 1);
}

TEST_CASE("torch aggregator: another library's failed allocation on another device makes it no PyTorch device") {
  Rig g;
  g.segment(A, 20 * MiB);
  g.block(A, 4 * MiB);
  Record failed = g.rec.oom(64 * MiB, 2 * MiB, 1 * GiB);
  failed.device = 1;  // (NCCL's, say: PyTorch never used device 1)
  g.torch.on_failed(failed);
  g.feed(g.rec.begin("after"));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.marks.size() == 1);
  CHECK(rep.torch.marks[0].device == 0);
  CHECK(rep.torch.marks[0].alloc_retries == 0);
  CHECK(rep.torch.devices.size() == 1);
}

// Tensors kept alive across iterations, against a forward pass that fills up: long enough for the
// checkpoints to be thinned several times (the per-line frees thinned with them).
TEST_CASE("torch aggregator: a line that keeps a tensor every step grows, a pass that fills up and frees does not") {
  Rig g;
  g.segment(A, 4 * GiB);
  keep_one_per_step(g, 600);
  // One long pass of another line (stack 5) that fills up with nothing freed meanwhile, then goes.
  uint64_t ramp_at = A + 3 * GiB;
  for (int k = 0; k < 700; ++k) g.block(ramp_at + uint64_t(k) * MiB, int64_t(MiB), 5);
  for (int k = 0; k < 700; ++k) g.block(ramp_at + uint64_t(k) * MiB, -int64_t(MiB));
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.growth.size() == 1);
  const TorchGrowth& kept = rep.torch.growth[0];
  CHECK(kept.stack_id == 3);
  CHECK(kept.kept_bytes >= 200 * MiB);  // ~300 MiB kept; the checkpoints see most of it
  CHECK(kept.kept_bytes <= 300 * MiB);
  CHECK(kept.freed_meanwhile >= kept.kept_bytes);
}

// The series ends with the end of the run: what the line kept after the last sampling checkpoint
// (its last steps here) counts too.
TEST_CASE("torch aggregator: a line's growth reaches what it holds at the end, after the last checkpoint") {
  Rig g;
  g.segment(A, 4 * GiB);
  uint64_t kept_at = keep_one_per_step(g, 600);
  for (int k = 0; k < 40; ++k) {  // the last outputs, in fewer events than the checkpoints' cadence (64 by now)
    g.block(kept_at, 512 * 1024, 3);
    kept_at += 512 * 1024;
  }
  TraceReport rep = g.finish();
  REQUIRE(rep.torch.growth.size() == 1);
  const TorchGrowth& kept = rep.torch.growth[0];
  CHECK(kept.stack_id == 3);
  CHECK(kept.bytes == 320 * MiB);  // its highest: all 640 outputs, at the end
  CHECK(kept.last_t_ns == rep.last_t_ns);
}
