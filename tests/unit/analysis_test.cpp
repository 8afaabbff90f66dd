// The analyses on hand-written event sequences: each case records events through the real
// recorder in a child process (so stacks are real: site_* functions are the call sites), then
// analyses the trace.
#include <catch2/catch.hpp>

#include "analysis.h"
#include "trace_fixture.h"

using vt::Event;
using vt::HookId;
using namespace vt::analyzer;

namespace {

constexpr uint64_t MiB = 1 << 20, GiB = 1ull << 30;

struct Seq {
  uint64_t t = 1000000;
  Event ev(HookId op, uint64_t addr, uint64_t size, uint64_t ctx = 0x10) {
    Event e;
    e.set_op(op);
    e.t_ns = (t += 1000);
    e.context = ctx;
    e.device = 0;
    if (addr) e.set_addr(addr);
    if (size) e.set_size(size);
    return e;
  }
};

volatile int g_site;

__attribute__((noinline)) void site_a(const Event& e) {
  vt::record(e);
  g_site = 1;  // not a tail call, and a body of its own (no identical-code folding)
}
__attribute__((noinline)) void site_b(const Event& e) {
  vt::record(e);
  g_site = 2;  // not a tail call, and a body of its own (no identical-code folding)
}
__attribute__((noinline)) void site_c(const Event& e) {
  vt::record(e);
  g_site = 3;  // not a tail call, and a body of its own (no identical-code folding)
}
__attribute__((noinline)) void site_keep(const Event& e) {
  vt::record(e);
  g_site = 4;  // not a tail call, and a body of its own (no identical-code folding)
}
__attribute__((noinline)) void site_temp(const Event& e) {
  vt::record(e);
  g_site = 5;  // not a tail call, and a body of its own (no identical-code folding)
}
__attribute__((noinline)) void site_free(const Event& e) {
  vt::record(e);
  g_site = 6;  // not a tail call, and a body of its own (no identical-code folding)
}

bool has(const std::vector<Frame>& stack, const std::string& fn) {
  for (const Frame& f : stack)
    if (f.function.find(fn) != std::string::npos) return true;
  return false;
}

// `steps` steps, each with a 64 MiB temporary (site_temp) and an 8 MiB buffer kept (site_keep).
void keep_one_per_step(Seq& s, int steps) {
  for (int step = 0; step < steps; ++step) {
    site_temp(s.ev(HookId::cuMemAlloc_v2, 0x100000000, 64 * MiB));
    site_free(s.ev(HookId::cuMemFree_v2, 0x100000000, 0));
    site_keep(s.ev(HookId::cuMemAlloc_v2, 0x200000000 + uint64_t(step) * 8 * MiB, 8 * MiB));
  }
}

TraceReport analyse(const std::function<void()>& body) {
  std::string path = fixture::temp_dir() + "/a.trace";
  fixture::write_trace(path, body);
  TraceReport rep;
  std::string err;
  REQUIRE(analyze_trace(path, AnalysisOptions{}, &rep, &err));
  return rep;
}

Event failure(Seq& s, uint64_t size, uint64_t free_b, uint64_t total) {
  Event e = s.ev(HookId::cuMemAlloc_v2, 0, size);
  e.result = 2;
  e.free_bytes = free_b;
  e.total_bytes = total;
  return e;
}

}  // namespace

TEST_CASE("GIVEN two allocations then a free WHEN analysed THEN the peak is their sum with both in its live set") {
  TraceReport r = analyse([] {
    Seq s;
    site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 100 * MiB));
    site_b(s.ev(HookId::cuMemAlloc_v2, 0x9000000, 50 * MiB));
    site_free(s.ev(HookId::cuMemFree_v2, 0x1000000, 0));
    site_c(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 30 * MiB));
  });
  REQUIRE(r.peaks.size() == 1);
  CHECK(r.peaks[0].bytes == 150 * MiB);
  CHECK(r.peaks[0].t_ns == 1000000 + 2 * 1000);
  REQUIRE(r.peaks[0].live_set.size() == 2);
  CHECK(r.peaks[0].live_set[0].bytes == 100 * MiB);
  CHECK(r.peaks[0].live_set[0].share == Approx(2.0 / 3));
  CHECK(has(r.peaks[0].live_set[0].stack, "site_a"));
  CHECK(has(r.peaks[0].live_set[1].stack, "site_b"));
  CHECK(r.peaks[0].by_kind.at("device") == 150 * MiB);
  // At the end: B and C are live.
  CHECK(r.leak_bytes == 80 * MiB);
  CHECK(r.leak_count == 2);
  CHECK(r.end == "clean_exit");
}

TEST_CASE("GIVEN memory in a context that is destroyed WHEN analysed THEN it is teardown, not a leak") {
  TraceReport r = analyse([] {
    Seq s;
    site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 10 * MiB, 0x10));
    site_b(s.ev(HookId::cuMemAlloc_v2, 0x2000000, 20 * MiB, 0x20));
    Event d = s.ev(HookId::cuCtxDestroy_v2, 0, 0, 0x20);
    d.set_aux(0x20);
    site_free(d);
  });
  CHECK(r.leak_bytes == 10 * MiB);
  REQUIRE(r.leaks.size() == 1);
  CHECK(has(r.leaks[0].stack, "site_a"));
  CHECK(r.teardown_bytes == 20 * MiB);
  REQUIRE(r.teardown.size() == 1);
  CHECK(has(r.teardown[0].stack, "site_b"));
}

TEST_CASE("GIVEN a site that keeps one buffer per step WHEN analysed THEN it is growth, the temporary site is not") {
  TraceReport r = analyse([] {
    Seq s;
    keep_one_per_step(s, 60);
    for (int step = 0; step < 60; ++step)  // freed at the end: still growth over the run
      site_free(s.ev(HookId::cuMemFree_v2, 0x200000000 + uint64_t(step) * 8 * MiB, 0));
  });
  REQUIRE(r.growth.size() == 1);
  CHECK(has(r.growth[0].site.stack, "site_keep"));
  CHECK(r.growth[0].growth_bytes >= 400 * MiB);
  CHECK(r.growth[0].new_highs >= 3);
  CHECK(r.growth[0].site.count == 0);  // all freed by the end
  CHECK(r.leak_bytes == 0);
}

// Checkpoints come every few events (more as the run gets longer): what a site kept after the
// last one must still count, the end of the run being the series' last point (the growth of a
// thread that was among the last to finish read 99 of its 100 MiB).
TEST_CASE("GIVEN a site whose last kept buffers come after the last checkpoint WHEN analysed THEN its growth reaches what it holds at the end") {
  TraceReport r = analyse([] {
    Seq s;
    keep_one_per_step(s, 60);
  });
  REQUIRE(r.growth.size() == 1);
  CHECK(has(r.growth[0].site.stack, "site_keep"));
  CHECK(r.growth[0].site.bytes == 480 * MiB);  // its highest: all 60 of them, at the end
  CHECK(r.growth[0].last_t_ns == r.last_t_ns);
  CHECK(r.leak_bytes == 480 * MiB);
}

TEST_CASE("GIVEN VMM and pool activity WHEN analysed THEN the fragmentation metrics follow their formulas") {
  TraceReport r = analyse([] {
    Seq s;
    site_a(s.ev(HookId::cuMemAddressReserve, 0x700000000000, 1 * GiB));
    Event c = s.ev(HookId::cuMemCreate, 0, 256 * MiB);
    c.set_aux(0x77);
    c.set_aux2(uint64_t(1) << 32);  // device 0
    site_b(c);
    Event m = s.ev(HookId::cuMemMap, 0x700000000000, 256 * MiB);
    m.set_aux(0x77);
    m.set_aux2(0);
    site_b(m);
    Event pc = s.ev(HookId::cuMemPoolCreate, 0, 0);
    pc.set_aux(0x5000);
    pc.set_aux2(uint64_t(1) << 32);
    site_c(pc);
    for (int i = 0; i < 4; ++i) {
      Event a = s.ev(HookId::cuMemAllocFromPoolAsync, 0x800000000 + uint64_t(i) * 64 * MiB, 64 * MiB);
      a.set_aux(0x5000);
      site_c(a);
    }
    site_free(s.ev(HookId::cuMemFreeAsync, 0x800000000, 0));                  // block 0
    site_free(s.ev(HookId::cuMemFreeAsync, 0x800000000 + 2 * 64 * MiB, 0));  // block 2
  });
  const Fragmentation& f = r.fragmentation;
  CHECK(f.vmm_reserved_bytes_at_peak == 1 * GiB);
  CHECK(f.vmm_mapped_bytes_at_peak == 256 * MiB);
  REQUIRE(f.pools.size() == 1);
  CHECK(f.pools[0].footprint_bytes == 256 * MiB);
  CHECK(f.pools[0].live_bytes == 128 * MiB);
  CHECK(f.pools[0].largest_free_gap_bytes == 64 * MiB);
  CHECK(f.pools[0].fragmentation == Approx(0.5));  // 1 - 64 / 128
  // The peak counts the physical handle and the live pool allocations, not the reservation.
  CHECK(r.peaks.at(0).bytes == 256 * MiB + 256 * MiB);
}

TEST_CASE("GIVEN a failed allocation, frees and a retry WHEN analysed THEN a cache flush is reported") {
  TraceReport r = analyse([] {
    Seq s;
    for (int i = 0; i < 3; ++i) site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000 + uint64_t(i) * GiB, 1 * GiB));
    site_b(failure(s, 2 * GiB, 1 * GiB, 16 * GiB));
    for (int i = 0; i < 2; ++i) site_free(s.ev(HookId::cuMemFree_v2, 0x1000000 + uint64_t(i) * GiB, 0));
    site_b(s.ev(HookId::cuMemAlloc_v2, 0x9000000000, 2 * GiB));
  });
  REQUIRE(r.fragmentation.cache_flushes.size() == 1);
  const CacheFlush& c = r.fragmentation.cache_flushes[0];
  CHECK(c.requested_bytes == 2 * GiB);
  CHECK(c.freed_bytes == 2 * GiB);
  CHECK(c.freed_count == 2);
  CHECK(c.retry_succeeded);
}

TEST_CASE("GIVEN failures in different situations WHEN judged THEN each gets its verdict") {
  SECTION("request_exceeds_device") {
    TraceReport r = analyse([] {
      Seq s;
      site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 1 * GiB));
      site_b(failure(s, 100 * GiB, 15 * GiB, 16 * GiB));
    });
    REQUIRE(r.ooms.size() == 1);
    CHECK(r.ooms[0].verdict == "request_exceeds_device");
    CHECK(has(r.ooms[0].stack, "site_b"));
    CHECK(r.ooms[0].causes[0].evidence.at("requested_bytes") == 100 * GiB);
  }
  SECTION("other_processes") {
    TraceReport r = analyse([] {
      Seq s;
      site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 1 * GiB));
      site_b(failure(s, 4 * GiB, 3 * GiB, 16 * GiB));  // 12 GiB used elsewhere
    });
    REQUIRE(r.ooms.size() == 1);
    CHECK(r.ooms[0].verdict == "other_processes");
    CHECK(r.ooms[0].not_attributable_bytes == 12 * GiB);
    CHECK(r.ooms[0].causes[0].evidence.at("other_bytes") == 12 * GiB);
  }
  SECTION("live_set_too_large") {
    TraceReport r = analyse([] {
      Seq s;
      for (int i = 0; i < 14; ++i) site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000 + uint64_t(i) * GiB, 1 * GiB));
      site_b(failure(s, 4 * GiB, 2 * GiB, 16 * GiB));
    });
    REQUIRE(r.ooms.size() == 1);
    CHECK(r.ooms[0].verdict == "live_set_too_large");
    CHECK(r.ooms[0].process_device_bytes == 14 * GiB);
    CHECK(has(r.ooms[0].top_holders.at(0).stack, "site_a"));
  }
  SECTION("leak_growth") {
    TraceReport r = analyse([] {
      Seq s;
      site_a(s.ev(HookId::cuMemAlloc_v2, 0x1000000, 1 * GiB));
      for (int step = 0; step < 100; ++step) {
        site_temp(s.ev(HookId::cuMemAlloc_v2, 0x100000000, 16 * MiB));
        site_free(s.ev(HookId::cuMemFree_v2, 0x100000000, 0));
        site_keep(s.ev(HookId::cuMemAlloc_v2, 0x200000000 + uint64_t(step) * 128 * MiB, 128 * MiB));
      }
      site_b(failure(s, 1 * GiB, 2 * GiB - 1 * GiB + 512 * MiB, 16 * GiB));
    });
    REQUIRE(r.ooms.size() == 1);
    CHECK(r.ooms[0].verdict == "leak_growth");
    REQUIRE_FALSE(r.ooms[0].grew_before.empty());
    CHECK(has(r.ooms[0].grew_before[0].site.stack, "site_keep"));
    CHECK(r.ooms[0].grew_before[0].site.count == 100);  // every kept buffer, live at the failure
  }
  SECTION("fragmentation") {
    TraceReport r = analyse([] {
      Seq s;
      for (int i = 0; i < 48; ++i)
        site_c(s.ev(HookId::cuMemAllocAsync, 0x800000000 + uint64_t(i) * 256 * MiB, 256 * MiB));
      for (int i = 0; i < 48; ++i) site_free(s.ev(HookId::cuMemFreeAsync, 0x800000000 + uint64_t(i) * 256 * MiB, 0));
      site_b(failure(s, 6 * GiB, 4 * GiB, 16 * GiB));  // 12 GiB used: the pool's free blocks
    });
    REQUIRE(r.ooms.size() == 1);
    CHECK(r.ooms[0].verdict == "fragmentation");
    CHECK(r.ooms[0].pool_cached_bytes == 12 * GiB);
  }
}
