// The pass's two loops (analysis.cpp): record by record while the live map fits the caches, then
// feed_ahead's queue, which prefetches each event's slot a few records ahead. The queue must keep
// the order of records: a trace whose live map outgrows the caches gives the same report through
// feed_all as record by record through feed().
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "analysis_pass.h"
#include "report_render.h"
#include "trace_fixture.h"

using vt::Event;
using vt::HookId;
using namespace vt::analyzer;

namespace {

// 300,000 allocations live at once (a live map of ~8 MiB, beyond the ~3 MiB where the queue
// starts), from two threads, freed in a shuffled order with new allocations between the frees and
// failed ones here and there: what the report says depends on the order of every event.
void record_many_live() {
  auto lane = [](int l) {
    constexpr int kLive = 150000;
    std::mt19937_64 rng(uint64_t(l) + 1);
    uint64_t t = 1000000 + uint64_t(l);
    auto ev = [&](HookId op, uint64_t addr, uint64_t size) {
      Event e;
      e.set_op(op);
      e.t_ns = (t += 2);  // the lanes interleave, never tie
      e.context = 0x10;
      e.device = 0;
      if (addr) e.set_addr(addr);
      if (size) e.set_size(size);
      return e;
    };
    const uint64_t base = 0x7f0000000000ull + (uint64_t(l) << 36);
    std::vector<uint64_t> live;
    for (int i = 0; i < kLive; ++i) {
      live.push_back(base + uint64_t(i) * 4096);
      vt::record(ev(HookId::cuMemAlloc_v2, live.back(), 512 + (rng() % 4096)));
    }
    std::shuffle(live.begin(), live.end(), rng);
    for (size_t i = 0; i < live.size(); ++i) {
      vt::record(ev(HookId::cuMemFree_v2, live[i], 0));
      if (i % 3 == 0) vt::record(ev(HookId::cuMemAlloc_v2, base + (uint64_t(kLive) + i) * 4096, 1 + (rng() % 65536)));
      if (i % 1000 == 0) {
        Event oom = ev(HookId::cuMemAlloc_v2, 0, 1ull << 40);
        oom.result = 2;  // CUDA_ERROR_OUT_OF_MEMORY
        vt::record(oom);
      }
    }
  };
  std::thread a(lane, 0), b(lane, 1);
  a.join();
  b.join();
}

}  // namespace

TEST_CASE("feed_all: a live map beyond the caches (the prefetch queue) gives the report it gives record by record") {
  const std::string path = fixture::temp_dir() + "/many_live.trace";
  REQUIRE(WIFEXITED(fixture::write_trace(path, record_many_live)));
  std::string err;
  auto queued = TraceReader::open(path, &err), one_by_one = TraceReader::open(path, &err);
  REQUIRE(queued);
  REQUIRE(one_by_one);
  AnalysisOptions opt;
  TraceReport a, b;
  {
    AnalysisPass pass(queued->process(), opt);
    pass.feed_all(*queued);
    a.process = queued->process();
    pass.finish(&a);
  }
  {
    AnalysisPass pass(one_by_one->process(), opt);
    Record r;
    while (one_by_one->next(&r)) pass.feed(r);  // (a metadata payload stays mapped: the copy may point into it)
    b.process = one_by_one->process();
    pass.finish(&b);
  }
  CHECK(a.events > 700000);
  REQUIRE_FALSE(a.peaks.empty());
  CHECK(a.peaks[0].bytes > 300000ull * 512);  // both lanes' allocations were live at once
  CHECK(report_json(a).dump() == report_json(b).dump());
}
