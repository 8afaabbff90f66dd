// CUDA graphs end to end: tests/programs/graph_memory.cpp builds graphs with memory nodes and
// captures stream-ordered allocations on the simulated driver; the report's figures (graph pool
// reserved and used, memory nodes, captured allocations, the peak with the graph pool in it, no
// leak for captured allocations, the OOM verdict) must be the driver's, as the program printed
// them. Also: a relaunch that leaves the graph pool as it was writes no record.
#include <catch2/catch.hpp>


#include <nlohmann/json.hpp>

#include "figures.h"
#include "accounting.h"

using nlohmann::json;

namespace {

using Run = e2e::FigureRun;
using e2e::count_op;

Run run_mode(const std::string& mode, std::vector<std::pair<std::string, std::string>> env = {}) {
  return e2e::run_figures({e2e::program("graph_memory"), mode}, std::move(env));
}

json report(const std::string& path, const std::string& section = "report") { return e2e::cli_json(path, section); }
std::string text_report(const std::string& path) { return e2e::cli_text(path); }

const json& graph_device(const json& j, int device) {
  REQUIRE(j.contains("graphs"));
  for (const json& g : j["graphs"])
    if (g["device"] == device) return g;
  FAIL("no graphs entry for device " << device);
  return j;
}

constexpr uint64_t MiB = 1 << 20;

}  // namespace

TEST_CASE("graph memory nodes: the graph pool is sampled at upload, launch, destroy and trim") {
  Run run = run_mode("graph");
  const auto& f = run.figures;
  REQUIRE(f.at("reserved_after_upload") >= 8 * MiB);  // the model: 2 MiB pages per allocation
  REQUIRE(f.at("used_after_upload") == f.at("reserved_after_upload"));
  REQUIRE(f.at("reserved_end") == 0);

  e2e::Trace t = e2e::load(run.trace);
  // Five launches of a graph whose memory the upload already bound: no record for any of them.
  CHECK(count_op(t, "cuGraphUpload") == 1);
  CHECK(count_op(t, "cuGraphLaunch") == 0);
  CHECK(count_op(t, "cuGraphAddMemAllocNode") == 1);
  CHECK(count_op(t, "cuGraphAddMemFreeNode") == 1);
  CHECK(count_op(t, "cuGraphAddNode_v2") == 2);  // the alloc and free nodes; the empty node is not recorded
  CHECK(count_op(t, "cuGraphInstantiateWithFlags") == 1);
  CHECK(count_op(t, "cuGraphExecDestroy") == 1);
  CHECK(count_op(t, "cuDeviceGraphMemTrim") == 1);
  CHECK(count_op(t, "cuDeviceGetGraphMemAttribute") == 0);  // a query: never recorded

  json j = report(run.trace);
  const json& g = graph_device(j, 0);
  CHECK(g["pool_reserved_max_bytes"] == f.at("reserved_max"));
  CHECK(g["pool_reserved_at_peak_bytes"] == f.at("reserved_after_upload"));
  CHECK(g["pool_reserved_bytes"] == f.at("reserved_end"));
  CHECK(g["pool_used_bytes"] == f.at("used_end"));
  CHECK(g["memory_nodes"] == f.at("nodes"));
  CHECK(g["memory_node_bytes"] == f.at("node_bytes"));
  CHECK(g["captured_allocations"] == 0);
  // The peak: the 16 MiB cuMemAlloc and the graph pool, together.
  CHECK(j["peak"]["bytes"] == 16 * MiB + f.at("reserved_after_upload"));
  CHECK(j["peak"]["by_kind"]["graph_pool"] == f.at("reserved_after_upload"));
  CHECK(j["peak"]["by_kind"]["device"] == 16 * MiB);
  CHECK(j["leaks"]["bytes"] == 0);

  std::string text = text_report(run.trace);
  CHECK(text.find("CUDA graph pool") != std::string::npos);
  CHECK(text.find("2 graph memory nodes made") != std::string::npos);
}

TEST_CASE("allocations captured into a graph are graph nodes, never live memory") {
  Run run = run_mode("capture");
  const auto& f = run.figures;
  e2e::Trace t = e2e::load(run.trace);
  size_t captured = 0, captured_frees = 0, real = 0;
  for (const auto& e : t.events) {
    if (!e.op || e.op->kind != vt::MemKind::Async) continue;
    bool mark = (e.fields & vt::format::kEvAux2) && e.aux2 == 1;
    if (e.op->action == vt::Action::Acquire) (mark ? captured : real)++;
    else if (mark) captured_frees++;
  }
  CHECK(captured == 3);
  CHECK(captured_frees == 2);
  CHECK(real == 1);
  CHECK(count_op(t, "cuStreamBeginCapture_v2") == 1);
  CHECK(count_op(t, "cuStreamEndCapture") == 1);

  json j = report(run.trace);
  const json& g = graph_device(j, 0);
  CHECK(g["captured_allocations"] == f.at("captured"));
  CHECK(g["captured_bytes"] == f.at("captured_bytes"));
  CHECK(g["memory_nodes"] == f.at("captured"));
  CHECK(g["pool_reserved_max_bytes"] == f.at("reserved_after_launch"));
  CHECK(g["pool_reserved_bytes"] == f.at("reserved_end"));
  // No leak for the captured allocations (the 4 MiB one is never freed by a captured free) and the
  // peak holds only what was really allocated: the graph pool at the launch and the 1 MiB on the
  // other stream, still live then (counted as live, the captured ones would make it 19 MiB).
  CHECK(j["leaks"]["bytes"] == 0);
  CHECK(j["leaks"]["count"] == 0);
  CHECK(j["peak"]["bytes"] == f.at("real_live_during_capture") + f.at("reserved_after_launch"));
  const bool async_above_real = j["peak"]["by_kind"].contains("async") && j["peak"]["by_kind"]["async"].get<uint64_t>() > MiB;
  CHECK_FALSE(async_above_real);

  std::string text = text_report(run.trace);
  CHECK(text.find("3 allocations of 14.0 MiB captured from streams into CUDA graphs") != std::string::npos);
}

TEST_CASE("capture into a graph on the per-thread default stream (_ptsz): captured, then real again") {
  Run run = run_mode("capture-ptsz");
  const auto& f = run.figures;
  e2e::Trace t = e2e::load(run.trace);
  CHECK(count_op(t, "cuStreamBeginCaptureToGraph_ptsz") == 1);
  CHECK(count_op(t, "cuStreamEndCapture_ptsz") == 1);
  json j = report(run.trace);
  const json& g = graph_device(j, 0);
  CHECK(g["captured_allocations"] == f.at("captured"));
  CHECK(g["captured_bytes"] == f.at("captured_bytes"));
  // The real allocation goes with the primary context's last release (a teardown, not a leak);
  // the captured ones are in neither.
  CHECK(j["leaks"]["bytes"] == 0);
  CHECK(j["leaks"]["teardown"]["bytes"] == f.at("real_live_at_end"));
  CHECK(j["leaks"]["teardown"]["count"] == 1);
  CHECK(j["peak"]["bytes"] == f.at("real_live_at_end"));
}

TEST_CASE("an OOM while the graph pool holds the memory says so, in PyTorch's terms") {
  Run run = run_mode("oom");
  const auto& f = run.figures;
  REQUIRE(f.at("oom_result") == 2);
  REQUIRE(f.at("after_trim_result") == 0);
  json j = report(run.trace, "oom");
  REQUIRE(j["ooms"].size() == 1);
  const json& o = j["ooms"][0];
  CHECK(o["verdict"] == "graph_pool");
  CHECK(o["graph_pool_reserved_bytes"] == f.at("reserved_at_oom"));
  CHECK(o["graph_pool_used_bytes"] == f.at("used_at_oom"));
  CHECK(o["process_by_kind"]["graph_pool"] == f.at("reserved_at_oom"));
  std::string remedies = o["remedies"].dump();
  CHECK(remedies.find("torch.cuda.graph") != std::string::npos);
  CHECK(remedies.find("cudaDeviceGraphMemTrim") != std::string::npos);
}

TEST_CASE("cuMemAllocAsync counts against the device's current pool, set by cuDeviceSetMemPool (rule 4)") {
  Run run = run_mode("current-pool");
  const auto& f = run.figures;
  json j = report(run.trace);
  auto pool = [&](uint64_t handle) -> const json* {
    char name[40];
    snprintf(name, sizeof name, "0x%llx", static_cast<unsigned long long>(handle));
    for (const json& p : j["fragmentation"]["pools"])
      if (p["pool"] == name) return &p;
    return nullptr;
  };
  INFO(j["fragmentation"].dump());
  const json* mine = pool(f.at("pool"));
  REQUIRE(mine);
  // Its allocations were the pool's: its trim left the live one (freed later by the teardown).
  CHECK((*mine)["footprint_bytes"] == f.at("live_in_pool"));
  CHECK((*mine)["device"] == 0);
  // The default pool, made current again by its handle, had the 1 MiB allocation only; no
  // allocation went to the unnamed default pool (listed, empty: cuDeviceGetDefaultMemPool named
  // its handle, so the threshold set through the handle reached it too).
  const json* def = pool(f.at("default_pool"));
  REQUIRE(def);
  CHECK((*def)["footprint_bytes"] == 1 * MiB);
  for (const json& p : j["fragmentation"]["pools"])
    if (p["pool"] == "default:0") CHECK(p["footprint_bytes"] == 0);
  CHECK(j["leaks"]["teardown"]["bytes"] == f.at("live_in_pool"));
}

TEST_CASE("a synchronize gives back what a pool keeps above its release threshold (rule 15)") {
  Run run = run_mode("release-at-sync");
  const auto& f = run.figures;
  REQUIRE(f.at("released_by_sync") == 8 * MiB);  // the driver's own figure (cuMemGetInfo around it)
  json j = report(run.trace);
  auto footprint = [&](const std::string& name) -> int64_t {
    for (const json& p : j["fragmentation"]["pools"])
      if (p["pool"] == name) return p["footprint_bytes"].get<int64_t>();
    return -1;
  };
  auto hex = [](uint64_t v) {
    char b[40];
    snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(b);
  };
  INFO(j["fragmentation"].dump());
  CHECK(footprint("default:0") == 0);                   // threshold 0: given back at the synchronize
  CHECK(footprint(hex(f.at("keep_pool"))) == 4 * MiB);  // threshold at its maximum: kept
  CHECK(footprint(hex(f.at("lazy_pool"))) == 4 * MiB);  // no synchronize after its free: kept
  // One record per synchronize after a free (two: the default pool's, the keeping pool's), none
  // for the synchronizes with no free before them.
  e2e::Trace t = e2e::load(run.trace);
  CHECK(t.metadata[vt::format::kTagPoolSync] == 2);
}

TEST_CASE("a release threshold set through the default pool's handle reaches its allocations (rules 4 and 15)") {
  // The handle from CUDA 13's cuMemGetDefaultMemPool, and from cuDeviceGetDefaultMemPool (what
  // cudart's cudaDeviceGetDefaultMemPool calls: PyTorch's backend:cudaMallocAsync sets the
  // threshold through it), recorded as the former.
  for (const char* mode : {"named-default", "named-default-device"}) {
    INFO(mode);
    Run run = run_mode(mode);
    const auto& f = run.figures;
    REQUIRE(f.at("reserved") == 8 * MiB);  // the driver kept it (threshold at its maximum)
    e2e::Trace t = e2e::load(run.trace);
    CHECK(e2e::count_op(t, "cuMemGetDefaultMemPool") + [&] {
            size_t n = 0;
            for (const auto& r : t.code_events) n += std::string(r.op->name) == "cuMemGetDefaultMemPool";
            return n;
          }() == 1);
    json j = report(run.trace);
    INFO(j["fragmentation"].dump());
    bool found = false;
    for (const json& p : j["fragmentation"]["pools"])
      if (p["pool"] == "default:0") {  // the threshold set through its handle reached it: kept
        found = true;
        CHECK(p["footprint_bytes"] == f.at("reserved"));
      }
    CHECK(found);
  }
}

TEST_CASE("more streams capturing than the recorder's table holds: every captured allocation is still a graph node") {
  Run run = run_mode("capture-many");
  const auto& f = run.figures;
  e2e::Trace t = e2e::load(run.trace);
  size_t captured = 0, real = 0;
  for (const auto& e : t.events)
    if (e.op && e.op->kind == vt::MemKind::Async && e.op->action == vt::Action::Acquire)
      ((e.fields & vt::format::kEvAux2) && e.aux2 == 1 ? captured : real)++;
  CHECK(captured == f.at("captured"));  // the 70th stream's too: the full table asks the driver
  CHECK(real == 1);
  json j = report(run.trace);
  const json& g = graph_device(j, 0);
  CHECK(g["captured_allocations"] == f.at("captured"));
  CHECK(g["captured_bytes"] == f.at("captured_bytes"));
  CHECK(j["peak"]["bytes"] == f.at("real_peak"));
  CHECK(j["leaks"]["bytes"] == 0);
}

TEST_CASE("a captured free of memory allocated outside any graph fails in the driver: the memory stays live until its real free") {
  Run run = run_mode("outside-free");
  const auto& f = run.figures;
  // cuda.h: during capture cuMemFreeAsync makes a free node, which needs a graph allocation.
  REQUIRE(f.at("captured_free_result") == 1);  // CUDA_ERROR_INVALID_VALUE
  e2e::Trace t = e2e::load(run.trace);
  size_t failed_frees = 0;
  for (const auto& e : t.events)
    if (e.op && e.op->id == vt::HookId::cuMemFreeAsync && e.result != 0) ++failed_frees;
  CHECK(failed_frees == 1);
  json j = report(run.trace);
  CHECK(j["peak"]["bytes"] == f.at("live_after_capture"));
  CHECK(j["leaks"]["bytes"] == 0);  // freed by the real cuMemFreeAsync, not by the capture
}

TEST_CASE("graph memory in a child graph moved into its parent counts like the same nodes in the graph itself") {
  Run direct = run_mode("child-direct"), moved = run_mode("child-moved");
  const auto& f = moved.figures;
  // The driver: cloning a graph with memory nodes is refused; moved in, its nodes are the
  // parent's, mapped at its upload like those of a graph launched directly.
  REQUIRE(f.at("clone_refused") == 1);
  REQUIRE(f.at("reserved_after_upload") >= f.at("node_bytes"));
  for (const char* k : {"reserved_after_upload", "used_after_upload", "reserved_after_launch", "used_after_launch",
                        "reserved_max", "reserved_end", "used_end"}) {
    INFO(k);
    REQUIRE(f.at(k) == direct.figures.at(k));
  }

  e2e::Trace t = e2e::load(moved.trace);
  CHECK(count_op(t, "cuGraphCreate") == 3);  // the child, the cloned one, the parent
  CHECK(count_op(t, "cuGraphAddMemAllocNode") == 2);
  int child_ok = 0, child_failed = 0;
  for (const auto& e : t.events)
    if (e.op && e.op->id == vt::HookId::cuGraphAddChildGraphNode) (e.result == 0 ? child_ok : child_failed)++;
  CHECK(child_ok == 1);      // the graph without memory nodes, cloned
  CHECK(child_failed == 1);  // the one with them (a failed call changes nothing: rule 1)
  CHECK(count_op(e2e::load(direct.trace), "cuGraphAddChildGraphNode") == 0);
  // The trace says which parent the child went into: the GRAPH node moved in, and the clone of it
  // the driver refused (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE). The other cuGraphAddNode_v2 calls
  // here add no node of theirs, and no node of another type is recorded.
  REQUIRE(f.at("clone_node_refused") == 1);
  int moved_in = 0, clone_refused = 0;
  for (const auto& e : t.events) {
    if (!e.op || e.op->id != vt::HookId::cuGraphAddNode_v2) continue;
    REQUIRE(e.has(vt::format::kEvAux2));
    CHECK((e.aux2 & 0xffffffffu) == vt::kGraphNodeGraph);
    CHECK(e.aux == f.at("parent_graph"));
    CHECK(e.addr == f.at("child_graph"));
    CHECK_FALSE(e.has(vt::format::kEvSize));
    if (e.result == 0 && (e.aux2 & vt::kGraphChildMoved)) moved_in++;
    if (e.result != 0 && !(e.aux2 & vt::kGraphChildMoved)) clone_refused++;
  }
  CHECK(moved_in == 1);
  CHECK(clone_refused == 1);
  CHECK(count_op(t, "cuGraphAddNode_v2") == 2);
  // `dump` names them: the parent as the graph, the child as the address.
  bool dumped = false;
  e2e::Spec dump{{e2e::cli(), "dump", "--no-stacks", moved.trace}, {}};
  dump.preload = false;
  e2e::Result d = e2e::run(dump);
  REQUIRE(d.exit_code == 0);
  for (const std::string& line : e2e::lines(d.out))
    if (json ev = json::parse(line); ev["op"] == "cuGraphAddNode_v2" && ev["result"] == 0) {
      CHECK(ev["graph"] == f.at("parent_graph"));
      CHECK(ev["address"] == f.at("child_graph"));
      CHECK(ev["node_type"] == (vt::kGraphNodeGraph | vt::kGraphChildMoved));
      dumped = true;
    }
  CHECK(dumped);

  json jd = report(direct.trace), jm = report(moved.trace);
  INFO(jm.dump(1));
  for (const json* j : {&jd, &jm}) {
    const json& g = graph_device(*j, 0);
    CHECK(g["memory_nodes"] == f.at("nodes"));
    CHECK(g["memory_node_bytes"] == f.at("node_bytes"));
    CHECK(g["pool_reserved_max_bytes"] == f.at("reserved_max"));
    CHECK(g["pool_reserved_at_peak_bytes"] == f.at("reserved_after_upload"));
    CHECK(g["pool_reserved_bytes"] == f.at("reserved_end"));
    CHECK(g["pool_used_bytes"] == f.at("used_end"));
    // The peak: the 16 MiB cuMemAlloc and the graph pool (rule 9); graph allocations are never
    // live memory or leaks of their own (rule 8).
    CHECK((*j)["peak"]["bytes"] == 16 * MiB + f.at("reserved_after_upload"));
    CHECK((*j)["peak"]["by_kind"]["graph_pool"] == f.at("reserved_after_upload"));
    CHECK((*j)["leaks"]["bytes"] == 0);
  }
  CHECK(jm["graphs"] == jd["graphs"]);
  CHECK(jm["peak"]["by_kind"] == jd["peak"]["by_kind"]);
}

TEST_CASE("stream-ordered memory freed by cuMemFree goes back at the next synchronize too (rule 15)") {
  // Only stream-ordered frees marked a pool release as possible: after a cuMemFree of pool
  // memory no synchronize was recorded, and the pool's footprint stayed (8 MiB where the driver had 0).
  Run run = run_mode("plain-free");
  REQUIRE(run.figures.at("released") == 8 * MiB);  // the driver's own figure
  json j = report(run.trace);
  INFO(j["fragmentation"].dump());
  bool found = false;
  for (const json& p : j["fragmentation"]["pools"])
    if (p["pool"] == "default:0") {
      found = true;
      CHECK(p["footprint_bytes"] == 0);
    }
  CHECK(found);
}
