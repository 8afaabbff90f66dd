// Every hooked operation, reached every way a real program reaches the driver, is recorded exactly
// once with its address, size, flags, stream, context and result.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <set>

#include <cuda.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

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

TEST_CASE("dlvsym of a driver without a version table hands out the hooks, and the workload is recorded once") {
  // Only there does glibc's dlvsym find an unversioned function (the toolkit's stub libcuda.so
  // is such an object; whether the real libcuda.so.1 is has not been checked on a GPU machine).
  std::vector<std::pair<std::string, std::string>> env = {{"LD_LIBRARY_PATH", VT_FAKECUDA_NOVERSION_DIR}};
  Trace t = run_workload({e2e::program("lookup_dynamic"), "dlvsym", "--expect-hooked"}, env);
  CHECK(t.ops() == expected_ops(false));
  CHECK(t.info.closed_cleanly);
  // Without the preload library the same pointers are the driver's own: the check can fail.
  e2e::Spec s{{e2e::program("lookup_dynamic"), "dlvsym", "--expect-hooked"}, env};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("unhooked: cuMemAlloc_v2") != std::string::npos);
  // With a version table (the simulated driver as built) glibc finds nothing, traced or not.
  e2e::Spec v{{e2e::program("lookup_dynamic"), "dlvsym"}, {}};
  r = e2e::run(v);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("missing: ") != std::string::npos);
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

namespace {

// `vramtrace dump --meta` of a trace (live or not): its NVML lists, as (time, other processes'
// bytes, rows) in order.
struct ListSeen {
  uint64_t t, others, rows;
};
std::vector<ListSeen> gpu_process_lists(const std::string& trace, pid_t self, uint64_t* context_t = nullptr) {
  e2e::Spec s{{e2e::cli(), "dump", "--meta", "--no-stacks", trace}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  std::vector<ListSeen> out;
  for (const std::string& line : e2e::lines(r.out)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (context_t && j.value("op", "") == "cuDevicePrimaryCtxRetain") *context_t = j["t_ns"];
    if (j.value("record", "") != "gpu processes") continue;
    ListSeen l{j["t_ns"], 0, 0};
    for (const auto& p : j["processes"])
      if (p["pid"] != uint64_t(self)) l.others += p["bytes"].get<uint64_t>(), l.rows++;
    out.push_back(l);
  }
  return out;
}

}  // namespace

TEST_CASE("the sampler writes NVML's list right after the first context and again only when the other processes change") {
  std::string dir = e2e::temp_dir(), spec = dir + "/nvml-processes";
  auto set_spec = [&](const std::string& v) {
    std::string tmp = spec + ".new";
    FILE* f = fopen(tmp.c_str(), "w");
    REQUIRE(f);
    fputs(v.c_str(), f);
    fclose(f);
    REQUIRE(rename(tmp.c_str(), spec.c_str()) == 0);  // never half a list
  };
  set_spec("4242:1073741824");
  std::string out = dir + "/traces";
  mkdir(out.c_str(), 0700);
  pid_t held = fork();
  if (held == 0) {
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    setenv("LD_PRELOAD", VT_LIBRARY, 1);
    setenv("VRAMTRACE_OUTPUT", out.c_str(), 1);
    setenv("VRAMTRACE_NVML_LIBRARY", VT_FAKENVML, 1);
    setenv("FAKENVML_PROCESSES_FILE", spec.c_str(), 1);
    execl(e2e::program("lifecycle").c_str(), "lifecycle", "hold", (char*)nullptr);
    _exit(127);
  }
  auto wait_for = [&](size_t n) {
    std::vector<ListSeen> l;
    for (int i = 0; i < 100; ++i) {
      auto files = e2e::files_in(out);
      if (!files.empty() && (l = gpu_process_lists(files[0], held)).size() >= n) break;
      usleep(50000);
    }
    return l;
  };
  std::vector<ListSeen> first = wait_for(1);
  set_spec("4242:3221225472,4343:1048576");  // another process grew, a third one came
  std::vector<ListSeen> second = wait_for(2);
  usleep(1000000);  // four rounds of the sampler with nothing changed
  kill(held, SIGTERM);
  waitpid(held, nullptr, 0);
  auto files = e2e::files_in(out);
  REQUIRE(files.size() == 1);
  uint64_t context_t = 0;
  std::vector<ListSeen> all = gpu_process_lists(files[0], held, &context_t);
  REQUIRE(first.size() >= 1);
  REQUIRE(second.size() >= 2);
  REQUIRE(all.size() == 2);  // one per change, none for the rounds that saw the same
  CHECK(all[0].others == 1ull << 30);
  CHECK(all[0].rows == 1);
  REQUIRE(context_t > 0);
  CHECK(all[0].t >= context_t);
  CHECK(all[0].t - context_t < 1'000'000'000);  // rule 14's window
  CHECK(all[1].others == (3ull << 30) + (1 << 20));
  CHECK(all[1].rows == 2);
  CHECK(all[1].t > all[0].t);
}

TEST_CASE("an NVML that hangs in its init costs the program a second at most, whatever its contexts and failures") {
  std::string dir = e2e::temp_dir();
  e2e::Spec s{{e2e::program("oom_scenarios"), "retries", "20"},
              {{"VRAMTRACE_OUTPUT", dir},
               {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
               {"FAKENVML_INIT_SLEEP_MS", "60000"}}};
  s.timeout_s = 60;
  auto t0 = std::chrono::steady_clock::now();
  e2e::Result r = e2e::run(s);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "retries: CUresult 2\n");
  // One wait of a second (the first context's, or the opening call's), then none: not one per
  // failure (20 s) nor one per wait. (A bound against a hang, not a speed target.)
  CHECK(seconds < 6);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  Trace t = e2e::load(files[0]);
  size_t failed = 0;
  for (const auto& e : t.events) failed += e.result == CUDA_ERROR_OUT_OF_MEMORY;
  CHECK(failed == 20);
  CHECK(t.metadata.count(fmt::kTagGpuProcesses) == 0);  // NVML never answered
}

// The op table's `fields` column (format/op_table.h) is what the reader names each field by and
// what docs/trace-format.md says; interpose/entry/describe.h must set exactly those fields. Every event
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
        // And a pool's maxSize (absent: no limit).
        const bool max_size = s.field == vt::Field::PoolMaxBytes;
        if (s.field == vt::Field::None) CHECK_FALSE(e.has(s.flag));
        else if (e.result == 0 && s.field != vt::Field::Captured && !free_node && !reading && !max_size)
          CHECK(e.has(s.flag));
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
