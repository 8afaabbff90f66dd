// Every hooked operation, reached every way a real program reaches the driver, is recorded exactly
// once with its address, size, flags, stream, context and result.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include <cuda.h>

#include "harness.h"

using e2e::Spec;
using e2e::Trace;
namespace fmt = vt::format;

namespace {

std::vector<std::string> expected_ops(bool ptsz) {
  std::string s = ptsz ? "_ptsz" : "";
  return {"cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemFree_v2", "cuMemFree_v2",
          "cuMemAllocManaged", "cuMemFree_v2", "cuMemHostAlloc", "cuMemFreeHost",
          "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister",
          "cuMemAllocAsync" + s, "cuMemFreeAsync" + s, "cuMemPoolCreate", "cuMemAllocFromPoolAsync" + s,
          "cuMemFreeAsync" + s, "cuMemPoolTrimTo", "cuMemPoolDestroy", "cuMemAddressReserve",
          "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease", "cuMemAddressFree",
          "cuArrayCreate_v2", "cuArrayDestroy", "cuArray3DCreate_v2", "cuArrayDestroy",
          "cuMemAlloc_v2", "cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle", "cuMemFree_v2",
          "cuMemAlloc_v2", "cuMemAlloc_v2", "cuCtxDestroy_v2", "cuMemAlloc_v2",
          "cuDevicePrimaryCtxReset_v2"};
}

Trace run_workload(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> env = {}) {
  std::string dir = e2e::temp_dir();
  env.push_back({"VRAMTRACE_OUTPUT", dir});
  e2e::Result r = e2e::run({argv, env});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  return e2e::load(files[0]);
}

}  // namespace

TEST_CASE("every lookup path records the whole workload once, in order") {
  struct Path {
    std::vector<std::string> argv;
    bool ptsz;
  };
  std::vector<Path> paths = {
      {{e2e::program("lookup_direct")}, false},
      {{e2e::program("lookup_dynamic"), "dlsym", "--expect-hooked"}, false},
      {{e2e::program("lookup_dynamic"), "procaddr", "--expect-hooked"}, false},
      {{e2e::program("lookup_dynamic"), "procaddr-ptsz", "--expect-hooked"}, true},
      {{e2e::program("lookup_dynamic"), "procaddr-v1", "--expect-hooked"}, false},
  };
  for (const Path& p : paths) {
    INFO(p.argv[0] << " " << (p.argv.size() > 1 ? p.argv[1] : ""));
    Trace t = run_workload(p.argv);
    CHECK(t.ops() == expected_ops(p.ptsz));
    // The context creations (held until the trace opened: the first one opens none) are recorded too.
    std::vector<std::string> code;
    for (const auto& e : t.code_events) code.push_back(e.op->name);
    CHECK(code == std::vector<std::string>{"cuDevicePrimaryCtxRetain", "cuCtxCreate_v4"});
    CHECK(t.info.closed_cleanly);
  }
}

TEST_CASE("without the preload library the same programs run and no pointer is ours") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s{{e2e::program("lookup_dynamic"), "procaddr"}, {{"VRAMTRACE_OUTPUT", dir}}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir).empty());
  // --expect-hooked must be able to fail: without the library nothing is hooked.
  s.argv.push_back("--expect-hooked");
  r = e2e::run(s);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("unhooked: cuGetProcAddress") != std::string::npos);
}

TEST_CASE("events carry sizes, flags, streams, handles, contexts and the header its devices") {
  Trace t = run_workload({e2e::program("lookup_direct")});
  REQUIRE(t.events.size() == expected_ops(false).size());
  const auto& ev = t.events;
  auto at = [&](size_t i) -> const vt::analyzer::Record& { return ev.at(i); };

  // Header.
  CHECK(t.info.driver_version == 13000);
  REQUIRE(t.info.devices.size() == 1);
  CHECK(t.info.devices[0].total_bytes == (16ull << 30));
  CHECK(t.info.devices[0].name.find("H200") != std::string::npos);
  CHECK(t.info.argv.at(0).find("lookup_direct") != std::string::npos);
  CHECK(t.info.pid > 0);
  CHECK(t.info.ppid > 0);

  for (const auto& e : ev) {
    CHECK(e.device == 0);
    CHECK(e.context != 0);
    CHECK(e.tid == ev[0].tid);
  }
  for (size_t i = 1; i < ev.size(); ++i) CHECK(ev[i].t_ns >= ev[i - 1].t_ns);

  CHECK(at(0).size == (1u << 20));
  CHECK(at(0).addr != 0);
  CHECK(at(2).addr == at(0).addr);                 // the free names the allocation
  CHECK(at(1).size >= 1000 * 100);                 // pitch * height
  CHECK(at(1).size % 100 == 0);
  CHECK(at(4).size == (4u << 20));
  CHECK(at(4).aux == CU_MEM_ATTACH_GLOBAL);
  CHECK(at(6).size == (64u << 10));
  CHECK(at(6).aux == CU_MEMHOSTALLOC_PORTABLE);
  CHECK(at(7).addr == at(6).addr);
  CHECK(at(8).size == (32u << 10));
  CHECK(at(10).size == (8u << 10));
  CHECK(at(11).addr == at(10).addr);
  // Stream-ordered: the stream is recorded on alloc and free.
  CHECK(at(12).size == (2u << 20));
  CHECK(at(12).stream != 0);
  CHECK(at(13).stream == at(12).stream);
  CHECK(at(13).addr == at(12).addr);
  // Pools: the allocation names the pool that was created.
  CHECK(at(14).aux != 0);
  CHECK(at(14).aux2 == (uint64_t(CU_MEM_LOCATION_TYPE_DEVICE) << 32));
  CHECK(at(15).aux == at(14).aux);
  CHECK(at(15).size == (3u << 20));
  CHECK(at(17).aux == at(14).aux);
  CHECK(at(18).aux == at(14).aux);
  // VMM: reserve, create, map into the reservation, unmap, release, free.
  uint64_t gran = at(20).size;
  CHECK(gran > 0);
  CHECK(at(19).size == 4 * gran);
  CHECK(at(20).aux != 0);
  CHECK(at(20).aux2 == (uint64_t(CU_MEM_LOCATION_TYPE_DEVICE) << 32));
  CHECK(at(21).addr == at(19).addr);
  CHECK(at(21).aux == at(20).aux);
  CHECK(at(21).aux2 == 0);
  CHECK(at(22).addr == at(19).addr);
  CHECK(at(23).aux == at(20).aux);
  CHECK(at(24).addr == at(19).addr);
  // Arrays: approximate bytes from the descriptor.
  CHECK(at(25).size == 64 * 64 * 4 * 4);
  CHECK(at(26).addr == at(25).addr);
  CHECK(at(27).size == 32 * 32 * 8);
  // IPC: the export names the allocation; the import's size comes from the driver's address range.
  CHECK(at(30).addr == at(29).addr);
  CHECK(at(31).size == (2u << 20));
  CHECK(at(31).addr != at(29).addr);
  CHECK(at(32).addr == at(31).addr);
  // The failed request: size, result and the device's state at that moment.
  const auto& oom = at(34);
  CHECK(oom.result == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(oom.size == (1ull << 40));
  CHECK(oom.addr == 0);
  CHECK(oom.total_bytes == (16ull << 30));
  CHECK(oom.free_bytes > (15ull << 30));
  CHECK(oom.free_bytes < oom.total_bytes);
  for (size_t i = 0; i < ev.size(); ++i)
    if (i != 34) CHECK(ev[i].result == 0);
  // Context teardown names the context whose memory it takes.
  CHECK(at(35).context != at(34).context);
  CHECK(at(36).aux == at(35).context);
  CHECK(at(38).aux == 0);                  // device 0
  CHECK(at(38).aux2 == at(37).context);    // the primary context being reset
}

TEST_CASE("a failure records what other processes hold") {
  Trace t = run_workload({e2e::program("lookup_direct")},
                         {{"FAKECUDA_TOTAL_BYTES", "8GiB"}, {"FAKECUDA_FOREIGN_BYTES", "3GiB"}});
  const auto& oom = t.events.at(34);
  CHECK(oom.result == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(oom.total_bytes == (8ull << 30));
  CHECK(oom.free_bytes <= (5ull << 30));
  CHECK(oom.free_bytes > (4ull << 30));
}

// The op table's `fields` column (format/op_table.h) is what the reader names each field by and
// what docs/trace-format.md says; interpose/describe.h must set exactly those fields. Every event
// sets no field its op does not list, and a successful one (with ordinary arguments, as here)
// sets every field it lists.
TEST_CASE("each event carries exactly the fields the op table lists for its op") {
  std::map<std::string, int> seen;
  const std::vector<std::vector<std::string>> workloads = {
      {e2e::program("lookup_direct")},
      {e2e::program("lookup_dynamic"), "procaddr-ptsz"},
      {e2e::program("lookup_dynamic"), "procaddr-v1"},
      {e2e::program("lifecycle"), "release-last"},
      {e2e::program("lifecycle"), "release-extra"},
      {e2e::program("graph_memory"), "graph"},
      {e2e::program("graph_memory"), "capture"},
      {e2e::program("graph_memory"), "capture-ptsz"},
      {e2e::program("graph_memory"), "child-moved"},
      {e2e::program("context_costs"), "vdpau"},
      {e2e::program("sharing"), "vmm"},
      {e2e::program("sharing"), "multicast"},
      {e2e::program("sharing"), "external"},
  };
  for (const auto& argv : workloads) {
    Trace t = run_workload(argv);
    std::vector<vt::analyzer::Record> all = t.events;
    all.insert(all.end(), t.code_events.begin(), t.code_events.end());
    for (const auto& e : all) {
      REQUIRE(e.op);
      INFO(e.op->name << " result " << e.result);
      seen[e.op->name]++;
      const vt::OpFields& f = e.op->fields;
      struct {
        fmt::EventFlag flag;
        vt::Field field;
      } slots[] = {{fmt::kEvAddr, f.addr}, {fmt::kEvSize, f.size}, {fmt::kEvAux, f.aux}, {fmt::kEvAux2, f.aux2}};
      for (const auto& s : slots) {
        INFO("field flag " << int(s.flag));
        // Optional: the captured mark (only when it was), and the size of a cuGraphAddNode free node.
        const bool free_node = s.field == vt::Field::Bytes && e.op->kind == vt::MemKind::GraphNode &&
                               e.has(fmt::kEvAux2) && e.aux2 != CU_GRAPH_NODE_TYPE_MEM_ALLOC;
        // And the free memory around a context or code op (absent when no context could be asked).
        const bool reading = s.field == vt::Field::FreeBefore || s.field == vt::Field::FreeAfter;
        if (s.field == vt::Field::None) CHECK_FALSE(e.has(s.flag));
        else if (e.result == 0 && s.field != vt::Field::Captured && !free_node && !reading) CHECK(e.has(s.flag));
      }
    }
  }
  // The workloads reach every recorded op but three older spellings no test program asks for
  // (describe.h gives each the body of its newer twin: cuIpcOpenMemHandle_v2,
  // cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxRelease_v2).
  // The graph and capture ops likewise share their twins' bodies (describe.h: describe_add_node,
  // describe_instantiate, describe_run, the capture begins and ends); queries are never recorded.
  const std::set<std::string> unreached = {"cuDevicePrimaryCtxReset", "cuIpcOpenMemHandle", "cuDevicePrimaryCtxRelease",
                                           "cuGraphAddNode", "cuGraphInstantiate", "cuGraphInstantiate_v2",
                                           "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz",
                                           "cuGraphUpload_ptsz", "cuGraphLaunch_ptsz", "cuStreamBeginCapture",
                                           "cuStreamBeginCapture_ptsz", "cuStreamBeginCapture_v2_ptsz",
                                           "cuStreamBeginCaptureToGraph",
                                           // The CUDA 2.x ABI, which the simulated driver does not
                                           // implement (describe.h: the bodies of their twins, 32-bit
                                           // values); cuMemMapArrayAsync's twin.
                                           "cuMemAlloc", "cuMemFree", "cuMemAllocHost", "cuMemAllocPitch",
                                           "cuArrayCreate", "cuArray3DCreate", "cuMemMapArrayAsync_ptsz"};
  // The context, code and pool-location ops beyond the workload's two context creations:
  // tests/e2e/context_test.cpp runs most of them; the rest share their twins' bodies (describe.h).
  auto code_op = [](const vt::OpInfo& op) {
    return (op.kind == vt::MemKind::Code || op.kind == vt::MemKind::PoolConfig || op.code >= 100) &&
           op.id != vt::HookId::cuDevicePrimaryCtxRetain && op.id != vt::HookId::cuCtxCreate_v4;
  };
  for (const vt::OpInfo& op : vt::kOps) {
    INFO(op.name);
    if (op.action != vt::Action::Lookup && op.action != vt::Action::Query && !unreached.count(op.name) && !code_op(op))
      CHECK(seen.count(op.name));
  }
}
