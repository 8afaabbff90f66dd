// The accounting rules (format/accounting.h) as the two replays apply them: the in-process live
// tracker (interpose/live/live_tracker.cpp, compiled into this test on its own) and the analyzer
// (analyzer/replay/live_state.cpp, and the report AnalysisPass makes of it). Every event sequence goes
// through both, and after every event every figure the tracker has is compared with the
// analyzer's: live bytes per device and bucket, of all devices, per call site, and the peak per
// device; at the end the report's peaks, leaks and per-site leaks are compared with the tracker's.
// Fixed sequences also check the figures themselves against the CUDA semantics (rule by rule);
// random ones, over every op of the hook list with hostile fields, check that the two agree.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "accounting.h"
#include "analysis_pass.h"
#include "event.h"
#include "live_state.h"
#include "live_tracker.h"

using namespace vt;
using vt::analyzer::AnalysisPass;
using vt::analyzer::LiveState;
using vt::analyzer::Record;
using vt::analyzer::TraceReport;
namespace fmt = vt::format;

namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr int kShared = kTrackedDevices;  // the tracker's row for devices outside 0..15 (and -1)

uint64_t device_location(int id) { return uint64_t(kLocationDevice) << 32 | uint32_t(id); }
uint64_t host_location() { return uint64_t(kLocationHost) << 32; }

// Feeds the same events to the tracker, to a LiveState and to a whole analysis pass, and compares
// after each event.
class Both {
 public:
  Both() : pass_(process(), options()) { forget_live_state(); }

  // One event: Event fields as the recorder fills them (fields says which optional ones are set).
  void apply(Event e) {
    e.t_ns = t_ += 1000;
    history_.push_back(describe(e));
    track_event(e);
    Record r;
    r.op = &kOps[int(e.op)];
    r.tag = r.op->code;
    r.t_ns = e.t_ns;
    r.fields = e.fields | (e.result ? fmt::kEvFailed : 0);
    r.result = e.result;
    r.context = e.context;
    r.device = e.device;
    r.stream = e.stream;
    r.addr = e.addr;
    r.size = e.size;
    r.aux = e.aux;
    r.aux2 = e.aux2;
    r.free_bytes = e.free_bytes;
    r.total_bytes = e.total_bytes;
    r.stack = e.stack;
    live_.apply(r);
    pass_.feed(r);
    ++step_;
    compare_now();
  }

  int64_t analyzer_bytes(int tracker_row, Bucket b) const {
    int64_t sum = 0;
    for (const auto& d : live_.devices())
      if (row_of(d.device) == tracker_row) sum += int64_t(d.bytes[int(b)]);
    return sum;
  }

  // The report of everything applied so far, compared with the tracker's figures.
  TraceReport finish() {
    TraceReport rep;
    rep.process = process();
    pass_.finish(&rep);
    INFO("the report after " << step_ << " events");
    std::map<int, uint64_t> peak_by_row;
    for (const auto& p : rep.peaks) {
      if (row_of(p.device) != kShared) CHECK(uint64_t(peak_bytes(p.device)) == p.bytes);
      peak_by_row[row_of(p.device)] = p.bytes;
    }
    for (int d = 0; d < kTrackedDevices; ++d)
      if (!peak_by_row.count(d)) CHECK(peak_bytes(d) == 0);  // the report lists devices with a peak
    // The graph pool is live device memory but no leak (rule 9): the analyzer's own per-device
    // figure, which compare_now() has checked against the tracker's bytes all along.
    std::map<int, int64_t> graph_by_row;
    int64_t graph_all = 0;
    for (const auto& d : live_.devices()) {
      graph_by_row[row_of(d.device)] += int64_t(d.graph_reserved);
      graph_all += int64_t(d.graph_reserved);
    }
    // Imported memory is no leak (rule 10): the report lists it apart.
    int64_t all = -graph_all;
    for (int b = 0; b < kBuckets; ++b)
      if (b != int(Bucket::Imported)) all += live_bytes(-1, b);
    CHECK(rep.leak_bytes == uint64_t(all));
    CHECK(rep.sharing.imported_bytes == uint64_t(live_bytes(-1, int(Bucket::Imported))));
    std::map<std::pair<int, std::string>, int64_t> by_row_kind;
    std::map<uint32_t, int64_t> device_by_stack;
    for (const auto& g : rep.leaks) {
      CHECK(g.kind != "imported");
      by_row_kind[{row_of(g.device), g.kind}] += int64_t(g.bytes);
      if (g.kind == "device") device_by_stack[slot_of(g.stack_id)] += int64_t(g.bytes);
    }
    for (const auto& g : rep.sharing.imported) {
      CHECK(g.kind == "imported");
      by_row_kind[{row_of(g.device), g.kind}] += int64_t(g.bytes);
    }
    for (int row = 0; row <= kShared; ++row)
      for (int b = 0; b < kBuckets; ++b) {
        INFO("row " << row << ", bucket " << analyzer::bucket_name(Bucket(b)));
        auto it = by_row_kind.find({row, analyzer::bucket_name(Bucket(b))});
        const int64_t graph = b == int(Bucket::Device) ? graph_by_row[row] : 0;
        CHECK(live_bytes(row, b) - graph == (it == by_row_kind.end() ? 0 : it->second));
      }
    for (uint32_t s : stacks_) CHECK(site_bytes(s) == device_by_stack[s]);
    return rep;
  }

  int64_t peak_seen(int row) const {
    auto it = peaks_.find(row);
    return it == peaks_.end() ? 0 : it->second;
  }
  const LiveState& live() const { return live_; }

 private:
  static vt::analyzer::ProcessInfo process() {
    vt::analyzer::ProcessInfo p;
    p.pid = 1;
    p.closed_cleanly = true;
    return p;
  }
  static vt::analyzer::AnalysisOptions options() {
    vt::analyzer::AnalysisOptions o;
    o.top = 1u << 30;  // every group: the leak figures are compared in full
    return o;
  }
  static int row_of(int device) { return device >= 0 && device < kTrackedDevices ? device : kShared; }
  static uint32_t slot_of(uint32_t stack) { return stack < kTrackedStacks ? stack : 0; }

  // The last events, for a failure's message.
  std::string recent() const {
    std::string out;
    for (size_t i = history_.size() > 12 ? history_.size() - 12 : 0; i < history_.size(); ++i) out += "\n  " + history_[i];
    return out;
  }
  static std::string describe(const Event& e) {
    char b[256];
    snprintf(b, sizeof b, "%s result=%d device=%d ctx=%#llx stack=%u fields=%#x addr=%#llx size=%#llx aux=%#llx aux2=%#llx",
             kOps[int(e.op)].name, e.result, e.device, (unsigned long long)e.context, e.stack, e.fields,
             (unsigned long long)e.addr, (unsigned long long)e.size, (unsigned long long)e.aux, (unsigned long long)e.aux2);
    return b;
  }

  void compare_now() {
    INFO("after event " << step_ << ", the last ones:" << recent());
    for (int row = 0; row <= kShared; ++row) {
      for (int b = 0; b < kBuckets; ++b) {
        INFO("row " << row << ", bucket " << analyzer::bucket_name(Bucket(b)));
        // Device 16 stands for the shared row in the tracker's API.
        REQUIRE(live_bytes(row, b) == analyzer_bytes(row, Bucket(b)));
      }
      int64_t& seen = peaks_[row];
      seen = std::max(seen, analyzer_bytes(row, Bucket::Device));
      INFO("peak of row " << row);
      REQUIRE(peak_bytes(row) == seen);
    }
    for (int b = 0; b < kBuckets; ++b) {
      int64_t sum = 0;
      for (const auto& d : live_.devices()) sum += int64_t(d.bytes[int(b)]);
      REQUIRE(live_bytes(-1, b) == sum);
    }
    std::map<uint32_t, int64_t> by_slot;
    for (const auto& row : live_.sites())
      if (row.key.bucket == Bucket::Device) by_slot[slot_of(row.key.stack)] += int64_t(row.b.bytes);
    for (const auto& [slot, bytes] : by_slot) {
      INFO("stack slot " << slot);
      if (slot == 0) {  // no stack, or one beyond the table: nobody's row, not counted
        REQUIRE(site_bytes(0) == 0);
        continue;
      }
      stacks_.insert(slot);
      REQUIRE(site_bytes(slot) == bytes);
    }
    for (uint32_t s : stacks_) REQUIRE(site_bytes(s) == by_slot[s]);
  }

  uint64_t t_ = 1'000'000;
  size_t step_ = 0;
  LiveState live_;
  AnalysisPass pass_;
  std::map<int, int64_t> peaks_;  // the highest device bytes of each row, seen step by step
  std::set<uint32_t> stacks_;
  std::vector<std::string> history_;
};

// Events as the recorder makes them.
struct Ev {
  int device = 0;
  uint64_t context = 0x10;
  uint32_t stack = 1;
  Event base(HookId op) const {
    Event e;
    e.set_op(op);
    e.device = device;
    e.context = context;
    e.fields = fmt::kEvContext;
    e.stack = stack;
    return e;
  }
  Event alloc(HookId op, uint64_t addr, uint64_t size) const {
    Event e = base(op);
    e.set_addr(addr);
    e.set_size(size);
    return e;
  }
  Event free(HookId op, uint64_t addr) const {
    Event e = base(op);
    e.stack = 0;
    e.set_addr(addr);
    return e;
  }
  Event from_pool(uint64_t addr, uint64_t size, uint64_t pool) const {
    Event e = alloc(HookId::cuMemAllocFromPoolAsync, addr, size);
    e.set_aux(pool);
    return e;
  }
  Event pool_create(uint64_t pool, uint64_t location) const {
    Event e = base(HookId::cuMemPoolCreate);
    e.set_aux(pool);
    e.set_aux2(location);
    return e;
  }
  Event vmm_create(uint64_t handle, uint64_t size, uint64_t location) const {
    Event e = base(HookId::cuMemCreate);
    e.set_size(size);
    e.set_aux(handle);
    e.set_aux2(location);
    return e;
  }
  Event vmm_release(uint64_t handle) const {
    Event e = base(HookId::cuMemRelease);
    e.set_aux(handle);
    return e;
  }
  Event map(uint64_t va, uint64_t size, uint64_t handle) const {
    Event e = base(HookId::cuMemMap);
    e.set_addr(va);
    e.set_size(size);
    e.set_aux(handle);
    e.set_aux2(0);
    return e;
  }
  Event unmap(uint64_t va, uint64_t size) const {
    Event e = base(HookId::cuMemUnmap);
    e.set_addr(va);
    e.set_size(size);
    return e;
  }
  Event vmm_import(uint64_t handle, uint64_t location) const {
    Event e = base(HookId::cuMemImportFromShareableHandle);
    e.set_aux(handle);
    e.set_aux2(location);
    return e;
  }
  Event retain(uint64_t va, uint64_t handle) const {
    Event e = base(HookId::cuMemRetainAllocationHandle);
    e.set_addr(va);
    e.set_aux(handle);
    return e;
  }
  Event map_at(uint64_t va, uint64_t size, uint64_t handle, uint64_t offset) const {
    Event e = map(va, size, handle);
    e.set_aux2(offset);
    return e;
  }
  Event multicast(HookId op, uint64_t mc, uint64_t size, uint64_t aux2) const {
    Event e = base(op);
    e.set_size(size);
    e.set_aux(mc);
    e.set_aux2(aux2);
    return e;
  }
  Event failed(Event e, int32_t result) const {
    e.result = result;
    e.addr = 0;
    e.fields &= uint8_t(~fmt::kEvAddr);
    return e;
  }
};

int64_t dev(int device) { return live_bytes(device, int(Bucket::Device)); }

}  // namespace

// ---- the rules, one sequence each, with the figures CUDA gives ----

TEST_CASE("accounting: VMM memory released while mapped stays until its last unmap (rule 5)") {
  Both both;
  Ev ev;  // device 0 makes memory on device 1
  both.apply(ev.vmm_create(7, 2 * MiB, device_location(1)));
  both.apply(ev.map(0x9000000, 2 * MiB, 7));
  both.apply(ev.map(0xa000000, 2 * MiB, 7));  // mapped twice
  both.apply(ev.vmm_release(7));              // PyTorch's expandable segments release right away
  CHECK(dev(1) == int64_t(2 * MiB));
  CHECK(dev(0) == 0);
  both.apply(ev.unmap(0x9000000, 2 * MiB));
  CHECK(dev(1) == int64_t(2 * MiB));  // one mapping left
  both.apply(ev.unmap(0xa000000, 2 * MiB));
  CHECK(dev(1) == 0);
  both.apply(ev.unmap(0xa000000, 2 * MiB));  // again: nothing
  TraceReport rep = both.finish();
  REQUIRE(rep.peaks.size() == 1);
  CHECK(rep.peaks[0].device == 1);
  CHECK(rep.peaks[0].bytes == 2 * MiB);
}

TEST_CASE("accounting: VMM memory unmapped first is freed at its release, and one unmap removes every mapping in its range") {
  Both both;
  Ev ev;
  both.apply(ev.vmm_create(1, 2 * MiB, device_location(0)));
  both.apply(ev.vmm_create(2, 4 * MiB, device_location(0)));
  both.apply(ev.map(0x10000000, 2 * MiB, 1));
  both.apply(ev.map(0x10200000, 4 * MiB, 2));
  both.apply(ev.unmap(0x10000000, 6 * MiB));  // both mappings at once
  CHECK(dev(0) == int64_t(6 * MiB));          // not released: still there
  both.apply(ev.vmm_release(2));
  CHECK(dev(0) == int64_t(2 * MiB));
  both.apply(ev.vmm_release(1));
  CHECK(dev(0) == 0);
  both.apply(ev.vmm_release(1));  // a second release of a freed handle: nothing
  both.finish();
}

TEST_CASE("accounting: VMM memory at a host location is pinned host memory of the event's device, and handles are not addresses") {
  Both both;
  Ev ev;
  ev.device = 2;
  both.apply(ev.vmm_create(0x5000, 8 * MiB, host_location()));
  CHECK(live_bytes(2, int(Bucket::PinnedHost)) == int64_t(8 * MiB));
  CHECK(dev(2) == 0);
  // An address equal to the handle's value is another key: its free leaves the handle alone.
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x5000, 1 * MiB));
  both.apply(ev.free(HookId::cuMemFree_v2, 0x5000));
  CHECK(live_bytes(2, int(Bucket::PinnedHost)) == int64_t(8 * MiB));
  // A location of a type this build does not know counts as device memory of the event's device.
  both.apply(ev.vmm_create(0x6000, 1 * MiB, uint64_t(9) << 32 | 3));
  CHECK(dev(2) == int64_t(1 * MiB));
  both.finish();
}

TEST_CASE("accounting: a stream-ordered allocation counts where its pool lives (rule 4)") {
  Both both;
  Ev ev;  // the stream's device is 0
  both.apply(ev.pool_create(0xb001, device_location(1)));
  both.apply(ev.pool_create(0xb002, host_location()));
  both.apply(ev.from_pool(0x7000000, 3 * MiB, 0xb001));
  both.apply(ev.from_pool(0x8000000, 5 * MiB, 0xb002));
  both.apply(ev.alloc(HookId::cuMemAllocAsync, 0x9000000, 7 * MiB));    // the device's current pool
  both.apply(ev.from_pool(0xa000000, 11 * MiB, 0xdead));                 // a pool created before tracing
  CHECK(dev(1) == int64_t(3 * MiB));
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == int64_t(5 * MiB));
  CHECK(dev(0) == int64_t(18 * MiB));
  ev.device = 1;  // the unseen pool used from another device: still its event's device
  both.apply(ev.from_pool(0xb000000, 13 * MiB, 0xdead));
  CHECK(dev(1) == int64_t(16 * MiB));
  both.apply(ev.free(HookId::cuMemFreeAsync, 0x7000000));  // freed on any stream: where it counted
  CHECK(dev(1) == int64_t(13 * MiB));
  both.apply(ev.base(HookId::cuMemPoolDestroy));  // no pool named: nothing
  Event destroy = ev.base(HookId::cuMemPoolDestroy);
  destroy.set_aux(0xb001);
  both.apply(destroy);
  ev.device = 0;
  both.apply(ev.from_pool(0x7000000, 1 * MiB, 0xb001));  // a destroyed pool: placed no more
  CHECK(dev(1) == int64_t(13 * MiB));
  CHECK(dev(0) == int64_t(19 * MiB));
  both.finish();
}

TEST_CASE("accounting: captured allocations and graph memory nodes hold no memory, and the graph pool counts by its samples (rules 8, 9)") {
  Both both;
  Ev ev;
  Event captured = ev.alloc(HookId::cuMemAllocAsync, 0x7000000, 6 * MiB);
  captured.set_aux2(1);
  both.apply(captured);
  Event node = ev.alloc(HookId::cuGraphAddMemAllocNode, 0x7800000, 3 * MiB);
  node.set_aux(0x77);
  node.set_aux2(device_location(1));
  both.apply(node);
  CHECK(dev(0) == 0);
  CHECK(dev(1) == 0);
  Event captured_free = ev.free(HookId::cuMemFreeAsync, 0x7000000);
  captured_free.set_aux2(1);
  both.apply(ev.alloc(HookId::cuMemAllocAsync, 0x7000000, 1 * MiB));  // a real one at the same address
  both.apply(captured_free);  // a captured free frees nothing now
  CHECK(dev(0) == int64_t(1 * MiB));
  auto sample = [&](HookId op, uint64_t reserved, uint64_t used) {
    Event e = ev.base(op);
    e.set_size(reserved);
    e.set_aux(used);
    return e;
  };
  both.apply(sample(HookId::cuGraphUpload, 8 * MiB, 8 * MiB));
  CHECK(dev(0) == int64_t(9 * MiB));
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x9000000, 4 * MiB));
  CHECK(peak_bytes(0) == int64_t(13 * MiB));
  both.apply(sample(HookId::cuGraphExecDestroy, 8 * MiB, 0));  // unbound, still reserved
  CHECK(dev(0) == int64_t(13 * MiB));
  Event no_sample = ev.base(HookId::cuGraphLaunch);
  both.apply(no_sample);  // the pool could not be read: nothing changes
  both.apply(ev.failed(sample(HookId::cuGraphLaunch, 64 * MiB, 64 * MiB), 2));  // failed: nothing
  CHECK(dev(0) == int64_t(13 * MiB));
  Event trim = sample(HookId::cuDeviceGraphMemTrim, 0, 0);
  trim.set_aux2(0);
  both.apply(trim);
  CHECK(dev(0) == int64_t(5 * MiB));
  CHECK(peak_bytes(0) == int64_t(13 * MiB));
  Event trim1 = sample(HookId::cuDeviceGraphMemTrim, 2 * MiB, 2 * MiB);
  trim1.set_aux2(1);  // a trim samples the device it names, not the event's
  both.apply(trim1);
  CHECK(dev(1) == int64_t(2 * MiB));
  CHECK(dev(0) == int64_t(5 * MiB));
  const auto* d0 = both.live().find_device(0);
  REQUIRE(d0);
  CHECK(d0->captured == 1);
  CHECK(d0->captured_bytes == 6 * MiB);
  CHECK(d0->graph_reserved == 0);
  CHECK(d0->graph_reserved_max == 8 * MiB);
  const auto* d1 = both.live().find_device(1);
  REQUIRE(d1);
  CHECK(d1->graph_nodes == 1);  // cuGraphAddMemAllocNode's location
  CHECK(d1->graph_node_bytes == 3 * MiB);
  CHECK(d1->graph_reserved == 2 * MiB);
  TraceReport rep = both.finish();
  CHECK(rep.leak_bytes == 1 * MiB + 4 * MiB);  // the real allocations only; the graph pool is no leak
}

TEST_CASE("accounting: failed calls, frees of unknown pointers, double frees and addresses handed out twice") {
  Both both;
  Ev ev;
  both.apply(ev.failed(ev.alloc(HookId::cuMemAlloc_v2, 0x1000000, 64 * MiB), 2));  // OOM
  both.apply(ev.failed(ev.vmm_create(3, 2 * MiB, device_location(0)), 1));
  CHECK(dev(0) == 0);
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x1000000, 4 * MiB));
  Event bad_free = ev.free(HookId::cuMemFree_v2, 0x1000000);
  bad_free.result = 1;  // CUDA_ERROR_INVALID_VALUE: not freed
  both.apply(bad_free);
  CHECK(dev(0) == int64_t(4 * MiB));
  both.apply(ev.free(HookId::cuMemFree_v2, 0x2000000));  // never allocated
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x1000000, 6 * MiB));  // its free was not seen (rule 3)
  CHECK(dev(0) == int64_t(6 * MiB));
  both.apply(ev.free(HookId::cuMemFree_v2, 0x1000000));
  both.apply(ev.free(HookId::cuMemFree_v2, 0x1000000));  // twice
  CHECK(dev(0) == 0);
  TraceReport rep = both.finish();
  CHECK(rep.peaks.at(0).bytes == 6 * MiB);  // the replaced allocation never counted with its successor
  CHECK(rep.failed_events == 3);
  CHECK(rep.unmatched_frees == 2);
}

TEST_CASE("accounting: IPC imports, managed and pinned memory in their buckets, and a teardown frees its context's memory only") {
  Both both;
  Ev a, b;
  b.context = 0x20;
  b.device = 1;
  both.apply(a.alloc(HookId::cuIpcOpenMemHandle_v2, 0x3000000, 32 * MiB));
  both.apply(a.alloc(HookId::cuMemAllocManaged, 0x4000000, 2 * MiB));
  both.apply(a.alloc(HookId::cuMemHostAlloc, 0x5000000, 3 * MiB));
  both.apply(a.alloc(HookId::cuMemHostRegister_v2, 0x6000000, 1 * MiB));
  both.apply(a.alloc(HookId::cuMemAlloc_v2, 0x7000000, 8 * MiB));
  both.apply(a.vmm_create(9, 2 * MiB, device_location(0)));
  both.apply(b.alloc(HookId::cuMemAlloc_v2, 0x8000000, 16 * MiB));
  CHECK(live_bytes(0, int(Bucket::Imported)) == int64_t(32 * MiB));
  CHECK(live_bytes(0, int(Bucket::Managed)) == int64_t(2 * MiB));
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == int64_t(4 * MiB));
  CHECK(dev(0) == int64_t(10 * MiB));
  // A primary context release that was not the last keeps everything (aux2 = 0).
  Event release = a.base(HookId::cuDevicePrimaryCtxRelease_v2);
  release.set_aux2(0);
  both.apply(release);
  CHECK(dev(0) == int64_t(10 * MiB));
  Event destroy = a.base(HookId::cuCtxDestroy_v2);
  destroy.set_aux(0x10);
  both.apply(destroy);
  CHECK(dev(0) == int64_t(2 * MiB));  // the VMM handle belongs to no context
  CHECK(live_bytes(0, int(Bucket::Imported)) == 0);
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == 0);
  CHECK(dev(1) == int64_t(16 * MiB));
  Event reset = b.base(HookId::cuDevicePrimaryCtxReset_v2);
  reset.set_aux2(0x20);
  both.apply(reset);
  CHECK(dev(1) == 0);
  TraceReport rep = both.finish();
  CHECK(rep.teardown_bytes == (32 + 2 + 3 + 1 + 8 + 16) * MiB);
}

TEST_CASE("accounting: an imported VMM handle is imported memory sized by its mappings, never this process's (rule 10)") {
  Both both;
  Ev ev;
  both.apply(ev.vmm_create(7, 4 * MiB, device_location(0)));  // our own, for comparison
  both.apply(ev.vmm_import(0x51, device_location(1)));         // a peer's memory on device 1
  CHECK(live_bytes(1, int(Bucket::Imported)) == 0);           // its size comes with its mappings
  both.apply(ev.map_at(0x40000000, 4 * MiB, 0x51, 0));
  CHECK(live_bytes(1, int(Bucket::Imported)) == int64_t(4 * MiB));
  both.apply(ev.map_at(0x40400000, 4 * MiB, 0x51, 2 * MiB));  // [2, 6) MiB of it: it is 6 MiB at least
  CHECK(live_bytes(1, int(Bucket::Imported)) == int64_t(6 * MiB));
  both.apply(ev.map_at(0x40800000, 2 * MiB, 0x51, 0));  // inside what is known: no change
  CHECK(live_bytes(1, int(Bucket::Imported)) == int64_t(6 * MiB));
  CHECK(dev(1) == 0);  // never device memory of this process, so never in its peak
  CHECK(dev(0) == int64_t(4 * MiB));
  both.apply(ev.vmm_release(0x51));  // released while mapped: stays until the last unmap (rule 5)
  CHECK(live_bytes(1, int(Bucket::Imported)) == int64_t(6 * MiB));
  both.apply(ev.unmap(0x40000000, 12 * MiB));
  CHECK(live_bytes(1, int(Bucket::Imported)) == 0);
  both.apply(ev.vmm_import(0x52, 0));  // no location read: the event's device
  both.apply(ev.map_at(0x40000000, 2 * MiB, 0x52, 0));
  both.apply(ev.unmap(0x40000000, 2 * MiB));
  CHECK(live_bytes(0, int(Bucket::Imported)) == int64_t(2 * MiB));  // still imported, not released
  TraceReport rep = both.finish();
  CHECK(rep.leak_bytes == 4 * MiB);  // our own handle only
  CHECK(rep.sharing.imported_bytes == 2 * MiB);
  CHECK(rep.sharing.imported_count == 1);
  CHECK(rep.sharing.imported_max_bytes == 6 * MiB);
  CHECK(rep.peaks.at(0).bytes == 4 * MiB);
  CHECK(rep.allocations.count == 1);  // imports are no allocations of this process
}

TEST_CASE("accounting: a retained VMM handle is freed only by its last release (rule 11)") {
  Both both;
  Ev ev;
  both.apply(ev.vmm_create(7, 2 * MiB, device_location(0)));
  both.apply(ev.map(0x40000000, 2 * MiB, 7));
  both.apply(ev.retain(0x40000000, 7));
  both.apply(ev.retain(0x40000000, 7));
  both.apply(ev.unmap(0x40000000, 2 * MiB));
  both.apply(ev.vmm_release(7));  // three references: two left
  CHECK(dev(0) == int64_t(2 * MiB));
  both.apply(ev.vmm_release(7));
  CHECK(dev(0) == int64_t(2 * MiB));
  both.apply(ev.vmm_release(7));  // the last one
  CHECK(dev(0) == 0);
  both.apply(ev.vmm_release(7));  // one too many: nothing
  // Released, then retained again through a mapping that outlived the release, then unmapped:
  // the retained reference keeps it.
  both.apply(ev.vmm_create(8, 4 * MiB, device_location(0)));
  both.apply(ev.map(0x40000000, 4 * MiB, 8));
  both.apply(ev.vmm_release(8));
  both.apply(ev.retain(0x40000000, 8));
  both.apply(ev.unmap(0x40000000, 4 * MiB));
  CHECK(dev(0) == int64_t(4 * MiB));
  both.apply(ev.vmm_release(8));
  CHECK(dev(0) == 0);
  // A retain of a handle the trace never saw made counts nothing; a new handle of that value
  // starts with one reference.
  both.apply(ev.retain(0x40000000, 9));
  both.apply(ev.vmm_create(9, 2 * MiB, device_location(0)));
  both.apply(ev.vmm_release(9));
  CHECK(dev(0) == 0);
  both.finish();
}

TEST_CASE("accounting: multicast objects hold no memory: the memory bound to them is counted once, by its cuMemCreate (rule 12)") {
  Both both;
  Ev ev;
  both.apply(ev.multicast(HookId::cuMulticastCreate, 0x90, 8 * MiB, 2));
  both.apply(ev.multicast(HookId::cuMulticastAddDevice, 0x90, 0, 0));
  both.apply(ev.vmm_create(7, 4 * MiB, device_location(0)));
  both.apply(ev.multicast(HookId::cuMulticastBindMem, 0x90, 4 * MiB, 7));
  both.apply(ev.map(0x40000000, 8 * MiB, 0x90));  // the team's address: no memory either
  CHECK(dev(0) == int64_t(4 * MiB));
  const auto& mcs = both.live().multicasts();
  REQUIRE(mcs.count(0x90));
  CHECK(mcs.at(0x90).size == 8 * MiB);
  CHECK(mcs.at(0x90).bound == 4 * MiB);
  CHECK(mcs.at(0x90).team == 2);
  CHECK(mcs.at(0x90).added == 1);
  both.apply(ev.multicast(HookId::cuMulticastUnbind, 0x90, 4 * MiB, 0));
  CHECK(both.live().multicasts().at(0x90).bound == 0);
  both.apply(ev.vmm_release(0x90));  // still mapped: the object stays (rule 5)
  CHECK(both.live().multicasts().count(0x90) == 1);
  both.apply(ev.unmap(0x40000000, 8 * MiB));
  CHECK(both.live().multicasts().count(0x90) == 0);
  both.apply(ev.multicast(HookId::cuMulticastCreate, 0x91, 2 * MiB, 1));
  TraceReport rep = both.finish();
  CHECK(rep.peaks.at(0).bytes == 4 * MiB);
  CHECK(rep.leak_bytes == 4 * MiB);  // the physical memory; no object is a leak
  CHECK(rep.sharing.multicast_objects == 2);
  CHECK(rep.sharing.multicast_bytes == 10 * MiB);
  CHECK(rep.sharing.multicast_live == 1);
  CHECK(rep.sharing.multicast_live_bytes == 2 * MiB);
}

TEST_CASE("accounting: memory bound to a multicast object stays allocated after its release until it is unbound or the object goes (rule 12)") {
  Both both;
  Ev ev;
  both.apply(ev.multicast(HookId::cuMulticastCreate, 0x90, 8 * MiB, 1));
  both.apply(ev.vmm_create(7, 4 * MiB, device_location(0)));
  Event bind = ev.multicast(HookId::cuMulticastBindMem, 0x90, 4 * MiB, 7);
  bind.set_addr(0);  // at offset 0
  both.apply(bind);
  both.apply(ev.vmm_release(7));  // never mapped, but bound: still allocated
  CHECK(dev(0) == int64_t(4 * MiB));
  Event unbind = ev.multicast(HookId::cuMulticastUnbind, 0x90, 4 * MiB, 1);  // another device's: not it
  unbind.set_addr(0);
  both.apply(unbind);
  CHECK(dev(0) == int64_t(4 * MiB));
  unbind.set_aux2(0);
  both.apply(unbind);  // its device: freed now
  CHECK(dev(0) == 0);
  // Bound by its address, unmapped and released: it stays until the object goes (rule 5 for
  // the object: its release, no mapping).
  both.apply(ev.vmm_create(8, 2 * MiB, device_location(0)));
  both.apply(ev.map(0x40000000, 2 * MiB, 8));
  Event by_addr = ev.multicast(HookId::cuMulticastBindAddr, 0x90, 2 * MiB, 2 * MiB);  // offset 2 MiB
  by_addr.set_addr(0x40000000);
  both.apply(by_addr);
  both.apply(ev.unmap(0x40000000, 2 * MiB));
  both.apply(ev.vmm_release(8));
  CHECK(dev(0) == int64_t(2 * MiB));
  both.apply(ev.vmm_release(0x90));
  CHECK(dev(0) == 0);
  CHECK(both.live().multicasts().count(0x90) == 0);
  // A bind at a bound offset replaces the binding; the first memory goes once released.
  both.apply(ev.multicast(HookId::cuMulticastCreate, 0x91, 8 * MiB, 1));
  both.apply(ev.vmm_create(9, 2 * MiB, device_location(0)));
  both.apply(ev.vmm_create(10, 2 * MiB, device_location(0)));
  Event b9 = ev.multicast(HookId::cuMulticastBindMem, 0x91, 2 * MiB, 9);
  b9.set_addr(0);
  both.apply(b9);
  both.apply(ev.vmm_release(9));
  CHECK(dev(0) == int64_t(4 * MiB));
  Event b10 = ev.multicast(HookId::cuMulticastBindMem, 0x91, 2 * MiB, 10);
  b10.set_addr(0);
  both.apply(b10);
  CHECK(dev(0) == int64_t(2 * MiB));
  TraceReport rep = both.finish();
  CHECK(rep.leak_bytes == 2 * MiB);
}

TEST_CASE("accounting: external mappings and imported pool pointers are imported, mipmapped arrays device memory, exports hold nothing (rules 10, 13)") {
  Both both;
  Ev ev;
  Event ext = ev.base(HookId::cuImportExternalMemory);
  ext.set_size(64 * MiB);
  ext.set_aux(0xe1);
  both.apply(ext);
  CHECK(live_bytes(0, int(Bucket::Imported)) == 0);  // the object holds nothing
  both.apply(ev.alloc(HookId::cuExternalMemoryGetMappedBuffer, 0x1000000, 4 * MiB));
  both.apply(ev.alloc(HookId::cuExternalMemoryGetMappedMipmappedArray, 0xa001, 80 * 1024));
  both.apply(ev.alloc(HookId::cuMemPoolImportPointer, 0x2000000, 1 * MiB));
  both.apply(ev.alloc(HookId::cuMipmappedArrayCreate, 0xa002, 87040));
  Event destroy = ev.base(HookId::cuDestroyExternalMemory);
  destroy.set_aux(0xe1);
  both.apply(destroy);  // frees no mapping
  CHECK(live_bytes(0, int(Bucket::Imported)) == int64_t(4 * MiB + 80 * 1024 + 1 * MiB));
  CHECK(dev(0) == 87040);
  both.apply(ev.free(HookId::cuMemFree_v2, 0x2000000));  // an imported pointer is closed with cuMemFree
  both.apply(ev.free(HookId::cuMemFree_v2, 0x1000000));
  both.apply(ev.free(HookId::cuMipmappedArrayDestroy, 0xa001));
  CHECK(live_bytes(0, int(Bucket::Imported)) == 0);
  Event exported = ev.base(HookId::cuIpcGetMemHandle);
  exported.set_addr(0xa002);
  both.apply(exported);
  CHECK(dev(0) == 87040);
  TraceReport rep = both.finish();
  CHECK(rep.leak_bytes == 87040);
  CHECK(rep.sharing.exports == 1);
  CHECK(rep.sharing.shared_bytes == 87040);
  CHECK(rep.unmatched_frees == 0);
}

// Rule 14: a context or code op as the recorder writes it (free bytes before in SIZE, after in AUX).
Record code_op(HookId op, uint64_t object, int device, uint64_t ctx, bool before, uint64_t free_before,
               uint64_t free_after) {
  Record r;
  r.op = &kOps[int(op)];
  r.tag = r.op->code;
  r.device = device;
  r.context = ctx;
  r.fields = fmt::kEvContext | fmt::kEvAux;
  if (r.op->fields.addr == Field::CodeObject) {
    r.addr = object;
    r.fields |= fmt::kEvAddr;
  }
  if (before) {
    r.size = free_before;
    r.fields |= fmt::kEvSize;
  }
  r.aux = free_after;
  if (r.op->fields.aux2 == Field::Device) {
    r.aux2 = 0;
    r.fields |= fmt::kEvAux2;
  }
  return r;
}

TEST_CASE("accounting: contexts and code are their own figure, measured by the free memory around them, and go back with their unload or context (rule 14)") {
  constexpr uint64_t GiB = 1024 * MiB, total = 16 * GiB;
  LiveState live;
  live.set_device_total(0, total);
  auto contexts = [&] { return live.code_bytes(0, CodeCategory::Context); };
  auto modules = [&] { return live.code_bytes(0, CodeCategory::Module); };
  // The first context: nothing was current to ask before it; it costs what the device uses after.
  live.apply(code_op(HookId::cuCtxCreate_v4, 0xc1, -1, 0, false, 0, total - 512 * MiB));
  CHECK(contexts() == 512 * MiB);
  CHECK(live.code_after_only_bytes(0) == 512 * MiB);  // marked: it may hold other processes' memory
  Record a;
  a.op = &kOps[int(HookId::cuMemAlloc_v2)];
  a.device = 0;
  a.context = 0xc1;
  a.fields = fmt::kEvContext | fmt::kEvAddr | fmt::kEvSize;
  a.addr = 0x7000000;
  a.size = 32 * MiB;
  live.apply(a);
  // The second: measured (the first was current), and not an allocation.
  uint64_t free = total - 544 * MiB;
  live.apply(code_op(HookId::cuCtxCreate_v4, 0xc2, 0, 0xc1, true, free, free - 512 * MiB));
  free -= 512 * MiB;
  CHECK(contexts() == 1024 * MiB);
  CHECK(live.code_after_only_bytes(0) == 512 * MiB);  // the measured one is not
  CHECK(live.bytes(0, Bucket::Device) == 32 * MiB);
  live.apply(code_op(HookId::cuModuleLoadData, 0x3d, 0, 0xc2, true, free, free - 2 * MiB));
  free -= 2 * MiB;
  live.apply(code_op(HookId::cuKernelGetFunction, 0x4e, 0, 0xc2, true, free, free - 2 * MiB));  // lazy: the library 0x4e
  free -= 2 * MiB;
  CHECK(modules() == 4 * MiB);
  live.apply(code_op(HookId::cuCtxSetLimit, 0, 0, 0xc2, true, free, free - 64 * MiB));  // keyed by its context
  CHECK(contexts() == 1088 * MiB);
  // A limit lowered gives memory back (a negative cost).
  live.apply(code_op(HookId::cuCtxSetLimit, 0, 0, 0xc2, true, free - 64 * MiB, free - 32 * MiB));
  CHECK(contexts() == 1056 * MiB);
  // An unload gives back what its key cost; a module of a context goes with it.
  Record unload = code_op(HookId::cuModuleUnload, 0x3d, 0, 0xc2, false, 0, 0);
  unload.fields &= uint8_t(~fmt::kEvAux);
  live.apply(unload);
  CHECK(modules() == 2 * MiB);
  Record destroy;
  destroy.op = &kOps[int(HookId::cuCtxDestroy)];
  destroy.device = 0;
  destroy.fields = fmt::kEvAux;
  destroy.aux = 0xc2;
  live.apply(destroy);
  CHECK(contexts() == 512 * MiB);  // its creation and its limits
  CHECK(modules() == 0);           // the lazy load made in it
  CHECK(live.bytes(0, Bucket::Device) == 32 * MiB);
  // Without a reading after the call nothing is known; a failed call changes nothing.
  Record blind = code_op(HookId::cuModuleLoad, 0x3f, 0, 0xc1, true, free, 0);
  blind.fields &= uint8_t(~fmt::kEvAux);
  live.apply(blind);
  Record failed = code_op(HookId::cuModuleLoad, 0x40, 0, 0xc1, true, free, free - 2 * MiB);
  failed.result = 2;
  live.apply(failed);
  CHECK(modules() == 0);
  // A device without a total (no device record): a context without `before` is not guessed.
  Record retain = code_op(HookId::cuDevicePrimaryCtxRetain, 0xd1, -1, 0, false, 0, 8 * GiB);
  retain.aux2 = 3;
  live.apply(retain);
  CHECK(live.code_bytes(3, CodeCategory::Context) == 0);
  CHECK(contexts() == 512 * MiB);
}

TEST_CASE("accounting: a pool named for a location counts there: a host pool's allocations are pinned host memory, a managed pool's managed (rule 4)") {
  Both both;
  Ev a;
  Event host = a.base(HookId::cuMemGetMemPool);
  host.set_aux(0xb7);
  host.set_aux2(host_location());
  both.apply(host);
  Event managed = a.base(HookId::cuMemSetMemPool);
  managed.set_aux(0xb8);
  managed.set_aux2(device_location(1) | kLocationManaged);
  both.apply(managed);
  both.apply(a.from_pool(0x9000000, 4 * MiB, 0xb7));
  both.apply(a.from_pool(0xa000000, 6 * MiB, 0xb8));
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == int64_t(4 * MiB));
  CHECK(live_bytes(1, int(Bucket::Managed)) == int64_t(6 * MiB));
  CHECK(live_bytes(-1, int(Bucket::Device)) == 0);
  Event attr = a.base(HookId::cuMemPoolSetAttribute);  // holds no memory, moves no pool
  attr.set_aux(0xb7);
  attr.set_aux2(4);
  attr.set_size(0);
  both.apply(attr);
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == int64_t(4 * MiB));
  both.finish();
}

TEST_CASE("accounting: cuMemAllocAsync takes its device's current pool: set by cuDeviceSetMemPool or cuMemSetMemPool, placed by its own location, trimmed by its handle (rule 4)") {
  Both both;
  Ev a;
  both.apply(a.pool_create(0xc1, host_location()));      // a pinned host pool
  both.apply(a.pool_create(0xc2, device_location(1)));   // a pool of device 1
  Event set = a.base(HookId::cuDeviceSetMemPool);
  set.set_aux(0xc1);
  set.set_aux2(device_location(0));
  both.apply(set);
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x1000000, 4 * MiB));  // from the host pool
  CHECK(live_bytes(0, int(Bucket::PinnedHost)) == int64_t(4 * MiB));
  CHECK(dev(0) == 0);
  CHECK(both.live().info(both.live().live().find(0x1000000)->second).pool == 0xc1);
  Event set13 = a.base(HookId::cuMemSetMemPool);  // CUDA 13: by location and type
  set13.set_aux(0xc2);
  set13.set_aux2(device_location(0));
  both.apply(set13);
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x2000000, 2 * MiB));  // where 0xc2 lives: device 1
  CHECK(dev(1) == int64_t(2 * MiB));
  Event managed = a.base(HookId::cuMemSetMemPool);  // the managed current pool: not cuMemAllocAsync's
  managed.set_aux(0xc3);
  managed.set_aux2(device_location(0) | kLocationManaged);
  both.apply(managed);
  Event host = a.base(HookId::cuMemSetMemPool);  // the host's current pool: neither
  host.set_aux(0xc1);
  host.set_aux2(host_location());
  both.apply(host);
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x3000000, 1 * MiB));
  CHECK(dev(1) == int64_t(3 * MiB));
  CHECK(live_bytes(-1, int(Bucket::Managed)) == 0);
  Event unseen = a.base(HookId::cuDeviceSetMemPool);  // a pool created before tracing: lives there
  unseen.set_aux(0xc9);
  unseen.set_aux2(device_location(2));
  both.apply(unseen);
  a.device = 2;
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x4000000, 8 * MiB));
  CHECK(dev(2) == int64_t(8 * MiB));
  CHECK(both.live().info(both.live().live().find(0x4000000)->second).pool == 0xc9);
  // A trim of the current pool's handle gives back what its freed allocations left.
  both.apply(a.free(HookId::cuMemFreeAsync, 0x4000000));
  CHECK(both.live().pools().at(0xc9).footprint() == 8 * MiB);
  Event trim = a.base(HookId::cuMemPoolTrimTo);
  trim.set_aux(0xc9);
  trim.set_size(0);
  both.apply(trim);
  CHECK(both.live().pools().at(0xc9).footprint() == 0);
  // Destroying the current pool makes the default pool current again.
  a.device = 0;
  Event destroy = a.base(HookId::cuMemPoolDestroy);
  destroy.set_aux(0xc2);
  both.apply(destroy);
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x5000000, 16 * MiB));
  CHECK(dev(0) == int64_t(16 * MiB));
  CHECK(both.live().info(both.live().live().find(0x5000000)->second).pool == 0);
  // A pool created anew at a current pool's handle is current nowhere (rule 3).
  both.apply(set);
  both.apply(a.pool_create(0xc1, device_location(1)));
  both.apply(a.alloc(HookId::cuMemAllocAsync, 0x6000000, 32 * MiB));
  CHECK(dev(0) == int64_t(48 * MiB));
  both.finish();
}

TEST_CASE("accounting: devices outside 0..15 and unknown devices share the tracker's last row, and stacks beyond its table or none are not counted per site") {
  Both both;
  Ev ev;
  ev.device = 20;
  ev.stack = 1u << 20;
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x1000000, 1 * MiB));
  ev.device = -1;
  ev.stack = 0;
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x2000000, 2 * MiB));
  CHECK(dev(kShared) == int64_t(3 * MiB));
  CHECK(site_bytes(0) == 0);  // (the summary reads ids 1 and up; threads without stacks share no counter)
  ev.device = 0;
  ev.stack = 7;
  both.apply(ev.alloc(HookId::cuMemAlloc_v2, 0x3000000, 4 * MiB));
  CHECK(site_bytes(7) == int64_t(4 * MiB));
  both.finish();
}

// ---- random sequences over every op ----

namespace {

// Events over every op of the hook list with fields drawn from small sets, so that keys collide,
// frees miss, mappings overlap, handles are released before and after their unmaps, pools live
// on other devices and at the host, contexts are torn down, and some calls fail.
Event random_event(std::mt19937_64& rng) {
  auto pick = [&](auto... v) {
    const uint64_t a[] = {uint64_t(v)...};
    return a[rng() % sizeof...(v)];
  };
  Event e;
  // Lookups, the 28 graph ops (rules 8 and 9) and the context, code and pool-location ops (codes
  // 100.., rules 4 and 14) less often: the older ops keep their share.
  auto graph_op = [](HookId id) {
    return (kOps[int(id)].code >= kOps[int(HookId::cuGraphAddMemAllocNode)].code &&
            kOps[int(id)].code <= kOps[int(HookId::cuStreamIsCapturing_ptsz)].code) ||
           kOps[int(id)].code >= 100;
  };
  // The 29 sharing ops (rules 10 to 13) at a third of the rate, so that the VMM ops they build on stay common.
  auto sharing_op = [](HookId id) {
    return kOps[int(id)].code >= kOps[int(HookId::cuMemImportFromShareableHandle)].code && kOps[int(id)].code < 100;
  };
  // Binds and unbinds (rule 12) at the full rate: they need released memory to find.
  auto binding_op = [](HookId id) {
    return id == HookId::cuMulticastBindMem || id == HookId::cuMulticastBindAddr || id == HookId::cuMulticastUnbind;
  };
  do e.set_op(HookId(rng() % kHookCount));
  while (kOps[int(e.op)].code == 0 ||  // observed only, never on the wire (the synchronizes)
         (kOps[int(e.op)].action == Action::Lookup && rng() % 4) || (graph_op(e.op) && rng() % 10) ||
         (sharing_op(e.op) && !binding_op(e.op) && rng() % 3));
  static const int kDevices[] = {0, 0, 0, 1, 1, 2, 15, 16, 40, -1};
  e.device = kDevices[rng() % 10];
  e.context = pick(0x10, 0x10, 0x20, 0x30);
  e.fields = fmt::kEvContext;
  e.stack = uint32_t(pick(0, 1, 2, 3, 4, 5, 6, 7, kTrackedStacks + 5));
  e.result = rng() % 10 ? 0 : int32_t(pick(1, 2, 200));
  const OpInfo& op = kOps[int(e.op)];
  const bool vmm = op.kind == MemKind::VmmMapping || op.kind == MemKind::VmmReservation ||
                   e.op == HookId::cuMulticastBindAddr;  // (binds a mapped address)
  uint64_t addr = vmm ? 0x40000000 + (rng() % 12) * 2 * MiB : 0x10000000 + (rng() % 24) * 0x100000;
  if (rng() % 32 == 0) addr = 0;  // damaged: no memory (rule 2)
  if (op.action != Action::Lookup && rng() % 16) e.set_addr(addr);
  uint64_t size = vmm ? pick(2, 2, 4, 6, 24) * MiB : (1 + rng() % 64) * 4096;
  if (op.action == Action::Acquire || vmm || rng() % 4 == 0) e.set_size(size);
  const uint64_t locations[] = {device_location(0), device_location(1), device_location(3), device_location(17),
                                host_location(),    uint64_t(kLocationHostNuma) << 32 | 1, 0, uint64_t(7) << 32};
  switch (op.kind) {
    case MemKind::VmmPhysical:
      e.set_aux(pick(0, 1, 2, 3, 4, 5, 6, 0x10000000));  // the last equals an address
      if (op.action == Action::Acquire && e.op != HookId::cuMemRetainAllocationHandle) e.set_aux2(locations[rng() % 8]);
      break;
    case MemKind::VmmImport:  // handles shared with cuMemCreate's, and multicast objects'
    case MemKind::Multicast:
      e.set_aux(pick(0, 1, 2, 3, 4, 5, 6, 9));
      e.set_aux2(op.kind == MemKind::VmmImport ? locations[rng() % 8] : pick(0, 1, 2));
      // Bindings (rule 12): few objects and offsets, so that unbinds find them; an unbind names
      // the binding's device, or another.
      if (e.op == HookId::cuMulticastBindMem || e.op == HookId::cuMulticastBindAddr ||
          e.op == HookId::cuMulticastUnbind) {
        e.set_aux(pick(5, 9));
        if (e.op == HookId::cuMulticastBindMem) e.set_aux2(pick(1, 2, 3, 4));
        if (e.op == HookId::cuMulticastBindAddr) e.set_aux2(pick(0, 2 * MiB));
        else e.set_addr(pick(0, 0, 0, 2 * MiB));
        e.device = rng() % 4 ? 0 : 1;
        if (e.op == HookId::cuMulticastUnbind) e.set_aux2(pick(0, 0, 0, 1));
      }
      break;
    case MemKind::VmmMapping:
      if (op.action == Action::Acquire) {
        e.set_aux(pick(0, 1, 2, 3, 4, 5, 6, 9));
        e.set_aux2(pick(0, 0, 2 * MiB));
      }
      break;
    case MemKind::Pool:
    case MemKind::Async:
      if (op.kind == MemKind::Pool || rng() % 3) e.set_aux(pick(0, 0xb1, 0xb2, 0xb3, 0xb4));
      if (e.op == HookId::cuMemPoolCreate) e.set_aux2(locations[rng() % 8]);
      if (e.op == HookId::cuMemAllocAsync || e.op == HookId::cuMemAllocAsync_ptsz) {
        e.fields &= uint8_t(~fmt::kEvAux);
        e.aux = 0;
      }
      if (op.kind == MemKind::Async && rng() % 4 == 0) e.set_aux2(pick(0, 1));  // captured (rule 8), or marked not
      break;
    case MemKind::GraphPool:  // a sample (size: reserved) or none; trim names its device
      if (rng() % 4 == 0) {
        e.size = 0;
        e.fields &= uint8_t(~fmt::kEvSize);
      } else {
        e.set_size(pick(0, 2, 4, 8, 8, 64) * MiB);
      }
      e.set_aux(e.size / 2);
      if (e.op == HookId::cuDeviceGraphMemTrim) e.set_aux2(pick(0, 1, 2, 16, 40));
      break;
    case MemKind::GraphNode:
      e.set_aux(0x77);
      if (rng() % 2) e.set_aux2(e.op == HookId::cuGraphAddMemAllocNode ? locations[rng() % 8] : pick(1, 10, 11));
      break;
    case MemKind::PoolConfig:  // a pool named for a location (rule 4), managed ones too
      e.set_aux(pick(0, 0xb1, 0xb2, 0xb3, 0xb4));
      e.set_aux2(rng() % 3 ? locations[rng() % 8] : device_location(int(rng() % 3)) | kLocationManaged);
      if (e.op != HookId::cuMemPoolSetAttribute && rng() % 2)  // made current for an event's device
        e.set_aux2(device_location(kDevices[rng() % 10]));
      break;
    case MemKind::Code:  // costs: never live memory (rule 14)
      if (rng() % 2) e.set_size(pick(8, 6, 4) * 1024 * MiB);
      if (rng() % 4) e.set_aux(pick(8, 6, 4) * 1024 * MiB);
      break;
    case MemKind::Context:
      if (e.op == HookId::cuCtxDestroy_v2 || e.op == HookId::cuCtxDestroy || e.op == HookId::cuCtxDetach ||
          e.op == HookId::cuGreenCtxDestroy)
        e.set_aux(pick(0x10, 0x20, 0x30, 0x99));
      else
        e.set_aux2(pick(0, 0x10, 0x20, 0x30));
      break;
    default:
      break;
  }
  if (!changes_memory(e.result) && op.action == Action::Acquire) {  // a failed acquire returns nothing
    e.addr = 0;
    e.fields &= uint8_t(~fmt::kEvAddr);
  }
  return e;
}

}  // namespace

TEST_CASE("accounting: random sequences over every op give the same figures in the tracker and the analyzer") {
  size_t vmm_freed_while_mapped = 0, cross_device_pool = 0, imports_sized = 0, retained_releases = 0, from_current = 0,
         freed_by_unbind = 0;
  for (uint64_t seed = 1; seed <= 250; ++seed) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    Both both;
    for (int i = 0; i < 600; ++i) {
      Event e = random_event(rng);
      int64_t before = live_bytes(-1, int(Bucket::Device)) + live_bytes(-1, int(Bucket::PinnedHost)) +
                       live_bytes(-1, int(Bucket::Imported));
      const int64_t imported_before = live_bytes(-1, int(Bucket::Imported));
      const bool retained_before = e.op == HookId::cuMemRelease && both.live().vmm_handles().count(e.aux);
      both.apply(e);
      int64_t after = live_bytes(-1, int(Bucket::Device)) + live_bytes(-1, int(Bucket::PinnedHost)) +
                      live_bytes(-1, int(Bucket::Imported));
      if (e.op == HookId::cuMemUnmap && after < before) ++vmm_freed_while_mapped;
      if (e.op == HookId::cuMulticastUnbind && after < before) ++freed_by_unbind;  // bound memory released before
      if (e.op == HookId::cuMemMap && live_bytes(-1, int(Bucket::Imported)) > imported_before) ++imports_sized;
      if (e.op == HookId::cuMemRelease && changes_memory(e.result) && after == before && retained_before) ++retained_releases;
      if (kOps[int(e.op)].kind == MemKind::Async && kOps[int(e.op)].action == Action::Acquire && e.addr &&
          changes_memory(e.result)) {
        auto it = both.live().live().find(e.addr);
        if (it != both.live().live().end() && both.live().info(it->second).device != e.device) ++cross_device_pool;
        if (it != both.live().live().end() && !(e.fields & fmt::kEvAux) && both.live().info(it->second).pool != 0)
          ++from_current;  // cuMemAllocAsync from a pool made current (rule 4)
      }
    }
    both.finish();
  }
  // The sequences reached the cases the rules are about.
  INFO("freed while mapped " << vmm_freed_while_mapped << ", cross-device pools " << cross_device_pool
                             << ", imports sized " << imports_sized << ", retained releases " << retained_releases
                             << ", from current pools " << from_current);
  CHECK(from_current > 20);
  INFO("freed by an unbind " << freed_by_unbind);
  CHECK(freed_by_unbind > 5);
  CHECK(vmm_freed_while_mapped > 20);
  CHECK(cross_device_pool > 20);
  CHECK(imports_sized > 20);  // mappings that told an import's size (rule 10)
  CHECK(retained_releases > 20);  // releases of live handles that freed nothing (mapped or retained)
}
