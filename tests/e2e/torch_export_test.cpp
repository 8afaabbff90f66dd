// The exports in PyTorch's terms, on a crafted trace with PyTorch's block records: the Perfetto
// export's PyTorch counters (allocated, reserved, inactive split) exact at every record, a freed
// segment included, the driver's counter under its own name, big tensors as instants named by the
// user's line, region marks where they are; `export --folded` weighing PyTorch's tensors at its
// allocated peak, each line ending at the user's line, and `--driver` for the driver's segments.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../crafted_trace.h"
#include "harness.h"
#include "perfetto_export.h"
#include "trace_format.h"

using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t A = 0x7f0000000000ull, B = 0x7f0010000000ull;

// Segment A (20 MiB) holds an 8 MiB weight (train.py:12, made through a library frame) and a
// 4 MiB activation (train.py:20); mark "step 0"; the activation goes; segment B (64 MiB) is taken
// for one 64 MiB tensor (train.py:30, through the library): the allocated peak, 72 MiB; it goes,
// and empty_cache() frees B: reserved falls with no block record.
std::string torch_trace(const std::string& dir) {
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3.13");
  t.device(0, 16ull << 30, "GPU");
  t.thread(100, "MainThread", true);
  t.pycode(1, 13, 12, "/src/train.py", "build");
  t.pycode(2, 13, 20, "/src/train.py", "step");
  t.pycode(3, 13, 30, "/src/train.py", "big");
  t.pycode(4, 13, 125, "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", "Linear.forward");
  using vt::format::python_frame;
  t.stack(1, {python_frame(4, 0, true), python_frame(1, 0, true)});
  t.stack(2, {python_frame(2, 0, true)});
  t.stack(3, {python_frame(4, 0, true), python_frame(3, 0, true)});
  t.alloc(A, 20 * MiB, 1);
  t.torch_block(0, A, 8 * MiB, 8 * MiB, 20 * MiB, 1);
  t.torch_block(0, A + 8 * MiB, 4 * MiB, 12 * MiB, 20 * MiB, 2);
  t.region(true, "step 0");
  t.region(false, "step 0");
  t.torch_block(0, A + 8 * MiB, -int64_t(4 * MiB), 8 * MiB, 20 * MiB, 2);
  t.alloc(B, 64 * MiB, 3);
  t.torch_block(0, B, 64 * MiB, 72 * MiB, 84 * MiB, 3);
  t.torch_block(0, B, -int64_t(64 * MiB), 8 * MiB, 84 * MiB, 3);
  t.free(B);  // empty_cache()
  t.region(true, "end");
  std::string path = dir + "/torch.trace";
  t.write(path);
  return path;
}

json perfetto(const std::string& trace) {
  std::ostringstream out;
  std::string err;
  vt::analyzer::PerfettoOptions opt;
  REQUIRE(vt::analyzer::export_perfetto(trace, out, opt, nullptr, &err));
  return json::parse(out.str());
}

}  // namespace

TEST_CASE("export --perfetto: PyTorch's figures as counters at every record, tensors and marks") {
  json j = perfetto(torch_trace(e2e::temp_dir()));
  // The counters, in the order written, and their state at each region mark.
  std::map<std::string, std::vector<uint64_t>> series;
  std::map<std::string, std::map<std::string, uint64_t>> at_mark;
  std::map<std::string, uint64_t> now;
  bool live_bytes = false, driver = false;
  std::vector<json> tensors;
  for (const json& e : j["traceEvents"]) {
    std::string name = e.value("name", "");
    if (e["ph"] == "C" && name.rfind("PyTorch ", 0) == 0) {
      CHECK(e["pid"] == 0);
      series[name].push_back(e["args"]["bytes"].get<uint64_t>());
      now[name] = e["args"]["bytes"].get<uint64_t>();
    }
    if (e["ph"] == "C" && name == "live bytes") live_bytes = true;
    if (e["ph"] == "C" && name == "driver memory") driver = true;
    if (e.value("cat", "") == "region" && e["args"]["mark"] == "begin") at_mark[name] = now;
    if (e.value("cat", "") == "tensor") tensors.push_back(e);
  }
  CHECK(driver);
  CHECK_FALSE(live_bytes);  // the driver's counter says what it is
  // Every change, in order: no thinning (all of it fits in one 100 us counter interval).
  CHECK(series["PyTorch allocated"] == std::vector<uint64_t>{8 * MiB, 12 * MiB, 8 * MiB, 72 * MiB, 8 * MiB});
  // 20 MiB from the first block; 84 with B's tensor; 20 again once B is freed (a driver event).
  CHECK(series["PyTorch reserved"] == std::vector<uint64_t>{20 * MiB, 84 * MiB, 20 * MiB});
  // A's free space while it holds a tensor (B, full or empty, adds none).
  CHECK(series["PyTorch inactive split"] == std::vector<uint64_t>{12 * MiB, 8 * MiB, 12 * MiB});
  CHECK(at_mark["step 0"] == std::map<std::string, uint64_t>{
                                 {"PyTorch allocated", 12 * MiB}, {"PyTorch reserved", 20 * MiB}, {"PyTorch inactive split", 8 * MiB}});
  CHECK(at_mark["end"]["PyTorch reserved"] == 20 * MiB);
  // The 64 MiB tensor (the default threshold) is an instant named by the user's line, its stack in stackFrames.
  REQUIRE(tensors.size() == 1);
  CHECK(tensors[0]["name"] == "tensor 64.0 MiB");
  CHECK(tensors[0]["args"]["site"] == "train.py:30 in big");
  CHECK(tensors[0]["args"]["size"] == 64 * MiB);
  CHECK(j["stackFrames"].contains(tensors[0]["sf"].get<std::string>()));
  const json& pt = j["otherData"]["pytorch"];
  CHECK(pt["layer"] == "on");
  CHECK(pt["devices"][0]["peak_allocated_bytes"] == 72 * MiB);
  CHECK(pt["devices"][0]["peak_reserved_bytes"] == 84 * MiB);
  CHECK(j["otherData"]["policy"]["tensor_instants"] == 1);
  CHECK(j["otherData"]["policy"]["tensors_not_drawn"] == 2);
  CHECK(j["otherData"]["policy"]["pytorch_counter_samples"] == 11);
}

TEST_CASE("export --perfetto: where PyTorch's figures are turned off, the counters stop and say why") {
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3.13");
  t.alloc(A, 20 * MiB);
  t.torch_block(0, A, 8 * MiB, 8 * MiB, 20 * MiB);
  t.torch_block(0, B, 8 * MiB, 16 * MiB, 20 * MiB);  // outside every segment: the analysis turns the figures off
  t.torch_block(0, A + 8 * MiB, 8 * MiB, 24 * MiB, 20 * MiB);
  std::string path = e2e::temp_dir() + "/off.trace";
  t.write(path);
  json j = perfetto(path);
  std::vector<uint64_t> allocated;
  int stopped = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "PyTorch allocated") allocated.push_back(e["args"]["bytes"].get<uint64_t>());
    if (e.value("cat", "") == "pytorch") {
      stopped++;
      CHECK(e["args"]["why"].get<std::string>().find("disagree") != std::string::npos);
    }
  }
  CHECK(allocated == std::vector<uint64_t>{8 * MiB});
  CHECK(stopped == 1);
  CHECK(j["otherData"]["pytorch"]["layer"] == "off");
  CHECK(j["otherData"]["pytorch"].contains("stopped_ts_us"));
}

TEST_CASE("export --folded: PyTorch's tensors at its allocated peak by the user's line, --driver the segments") {
  std::string trace = torch_trace(e2e::temp_dir());
  e2e::Result r = e2e::run_cli({"export", "--folded", "-", trace});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // 72 MiB at the peak: the 64 MiB tensor and the 8 MiB weight, each ending at the user's line
  // (the library frame below it, Linear.forward, is its biggest call site's only).
  CHECK(r.out == "py:big (/src/train.py:30) " + std::to_string(64 * MiB) + "\npy:build (/src/train.py:12) " +
                     std::to_string(8 * MiB) + "\n");
  e2e::Result native = e2e::run_cli({"export", "--folded", "-", "--native", trace});
  CHECK(native.out.find("Linear.forward") != std::string::npos);
  e2e::Result drv = e2e::run_cli({"export", "--folded", "-", "--driver", trace});
  INFO(drv.out << drv.err);
  REQUIRE(drv.exit_code == 0);
  // The driver's peak: both segments, 84 MiB, by the calls that made them.
  uint64_t sum = 0;
  std::istringstream lines(drv.out);
  for (std::string line; std::getline(lines, line);) sum += std::stoull(line.substr(line.rfind(' ') + 1));
  CHECK(sum == 84 * MiB);
  CHECK(e2e::run_cli({"export", "--folded", "-", "--driver", "--leaks", trace}).exit_code == 2);
  CHECK(e2e::run_cli({"export", "--perfetto", e2e::temp_dir() + "/x.json", "--driver", trace}).exit_code == 2);
}

namespace {

// `vramtrace export --torch-snapshot` of `trace` with `args`, loaded by Python's pickle and given
// back as JSON (tuples become lists).
json snapshot(const std::string& trace, std::vector<std::string> args = {}) {
  std::string out = e2e::temp_dir() + "/snapshot.pickle";
  std::vector<std::string> cmd = {"export", "--torch-snapshot", out, trace};
  cmd.insert(cmd.end(), args.begin(), args.end());
  e2e::Result r = e2e::run_cli(cmd);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  e2e::Spec py;
  py.argv = {"python3", "-c", "import json, pickle, sys; print(json.dumps(pickle.load(open(sys.argv[1], 'rb'))))", out};
  py.preload = false;
  e2e::Result p = e2e::run(py);
  INFO(p.err);
  REQUIRE(p.exit_code == 0);
  return json::parse(p.out);
}

std::vector<std::string> actions(const json& s) {
  std::vector<std::string> out;
  for (const auto& e : s["device_traces"][0]) out.push_back(e["action"].get<std::string>());
  return out;
}

}  // namespace

// The crafted PyTorch run as PyTorch's snapshot: segment A with the weight and a free piece at the
// end, B's segment_alloc / segment_free around its tensor (empty_cache), the user's frames.
TEST_CASE("export --torch-snapshot: PyTorch's segments, blocks and actions, Python frames first") {
  std::string trace = torch_trace(e2e::temp_dir());
  json s = snapshot(trace);
  REQUIRE(s["segments"].size() == 1);
  const json& a = s["segments"][0];
  CHECK(a["address"] == A);
  CHECK(a["total_size"] == 20 * MiB);
  CHECK(a["allocated_size"] == 8 * MiB);
  CHECK(a["segment_type"] == "large");
  REQUIRE(a["blocks"].size() == 2);
  CHECK(a["blocks"][0] == json({{"address", A}, {"size", 8 * MiB}, {"requested_size", 8 * MiB}, {"state", "active_allocated"},
                                {"frames", a["blocks"][0]["frames"]}}));
  CHECK(a["blocks"][0]["frames"][0]["filename"] == "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py");
  CHECK(a["blocks"][0]["frames"][1] == json({{"name", "build"}, {"filename", "/src/train.py"}, {"line", 12}}));
  CHECK(a["blocks"][1]["state"] == "inactive");
  CHECK(a["blocks"][1]["size"] == 12 * MiB);
  CHECK(actions(s) == std::vector<std::string>{"segment_alloc", "alloc", "alloc", "free_requested", "free_completed",
                                               "segment_alloc", "alloc", "free_requested", "free_completed", "segment_free",
                                               "snapshot"});
  // The end of the trace is a snapshot, as PyTorch records one where it takes one: the active bytes.
  CHECK(s["device_traces"][0][10]["size"] == 8 * MiB);
  CHECK(s["device_traces"][0][10]["addr"] == 0);
  CHECK(s["device_traces"][0][6]["size"] == 64 * MiB);
  CHECK(s["device_traces"][0][6]["frames"][1]["name"] == "big");
  CHECK(s["vramtrace"]["block_layer"] == true);
  // Frames: the same stack's list is one object in the pickle, equal wherever it appears.
  CHECK(s["device_traces"][0][0]["frames"] == s["device_traces"][0][1]["frames"]);
}

// Blocks handed out on another stream than the default (torch stream alloc records): PyTorch's
// pools are per stream, so the segment the first one opened is that stream's, and so are its
// actions, its frees' and a segment_free's; default-stream blocks stay on 0.
TEST_CASE("export --torch-snapshot: streams of blocks, segments and actions") {
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3.13");
  t.device(0, 16ull << 30, "GPU");
  t.thread(100, "MainThread", true);
  constexpr uint64_t kSide = 0x55d0c0de0000ull;
  t.alloc(A, 20 * MiB);
  t.torch_alloc(0, A, 4 * MiB, 4 * MiB - 100, 4 * MiB, 20 * MiB);
  t.alloc(B, 20 * MiB);
  t.torch_stream_alloc(0, B, 2 * MiB + 512, 2 * MiB + 7, kSide, 6 * MiB + 512, 40 * MiB);
  t.torch_stream_alloc(0, B + 4 * MiB, 8 * MiB, 0, kSide, 14 * MiB + 512, 40 * MiB);  // request not seen
  t.torch_block(0, B, -int64_t(2 * MiB + 512), 12 * MiB, 40 * MiB);
  t.torch_block(0, B + 4 * MiB, -int64_t(8 * MiB), 4 * MiB, 40 * MiB);
  t.free(B);  // empty_cache()
  std::string trace = e2e::temp_dir() + "/streams.trace";
  t.write(trace);
  json s = snapshot(trace, {"--torch-only"});
  REQUIRE(s["segments"].size() == 1);
  CHECK(s["segments"][0]["stream"] == 0);
  std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t>> got;  // action, addr, size, stream
  for (const auto& e : s["device_traces"][0])
    got.emplace_back(e["action"], e["addr"].get<uint64_t>(), e["size"].get<uint64_t>(), e["stream"].get<uint64_t>());
  using R = std::tuple<std::string, uint64_t, uint64_t, uint64_t>;
  CHECK(got == std::vector<R>{R{"segment_alloc", A, 20 * MiB, 0}, R{"alloc", A, 4 * MiB - 100, 0},
                              R{"segment_alloc", B, 20 * MiB, kSide}, R{"alloc", B, 2 * MiB + 7, kSide},
                              R{"alloc", B + 4 * MiB, 8 * MiB, kSide}, R{"free_requested", B, 2 * MiB + 7, kSide},
                              R{"free_completed", B, 2 * MiB + 7, kSide}, R{"free_requested", B + 4 * MiB, 8 * MiB, kSide},
                              R{"free_completed", B + 4 * MiB, 8 * MiB, kSide}, R{"segment_free", B, 20 * MiB, kSide},
                              R{"snapshot", 0, 4 * MiB, 0}});
  CHECK(s["segments"][0]["requested_size"] == 4 * MiB - 100);
  // `vramtrace dump` shows a block's stream.
  e2e::Result d = e2e::run_cli({"dump", trace});
  CHECK(d.out.find("\"stream\":" + std::to_string(kSide)) != std::string::npos);
}

// Without PyTorch's block layer (raw CUDA, JAX, CuPy): each device allocation a segment with one
// block, said so; --torch-only leaves nothing.
TEST_CASE("export --torch-snapshot: a trace without PyTorch gives each allocation a segment, and says so") {
  crafted::CraftedTrace t;
  t.process({"./app"}, "/usr/bin/app");
  t.device(0, 16ull << 30, "GPU");
  t.thread(100, "app", true);
  t.alloc(A, 3 * MiB);
  t.alloc(B, 5 * MiB);
  t.free(A);
  std::string trace = e2e::temp_dir() + "/raw.trace";
  t.write(trace);
  json s = snapshot(trace);
  REQUIRE(s["segments"].size() == 1);
  CHECK(s["segments"][0]["address"] == B);
  CHECK(s["segments"][0]["total_size"] == 5 * MiB);
  CHECK(s["segments"][0]["blocks"].size() == 1);
  CHECK(s["segments"][0]["blocks"][0]["state"] == "active_allocated");
  CHECK(s["segments"][0]["vramtrace_owner"] == "unknown (no stack)");
  CHECK(actions(s) == std::vector<std::string>{"segment_alloc", "alloc", "segment_alloc", "alloc", "free_requested",
                                               "free_completed", "segment_free", "snapshot"});
  CHECK(s["device_traces"][0][7]["size"] == 5 * MiB);
  CHECK(s["vramtrace"]["block_layer"] == false);
  CHECK(s["vramtrace"]["note"].get<std::string>().find("without PyTorch's block records") != std::string::npos);
  json only = snapshot(trace, {"--torch-only"});
  CHECK(only["segments"].empty());
  CHECK(only["device_traces"].empty());
  // Options of the other formats are refused, and these are refused without --torch-snapshot.
  CHECK(e2e::run_cli({"export", "--torch-snapshot", e2e::temp_dir() + "/x.pickle", "--leaks", trace}).exit_code == 2);
  CHECK(e2e::run_cli({"export", "--perfetto", e2e::temp_dir() + "/x.json", "--torch-only", trace}).exit_code == 2);
  CHECK(e2e::run_cli({"export", "--torch-snapshot", e2e::temp_dir() + "/x.pickle", "--stacks", "cpp", trace}).exit_code == 2);
  // No room for the actions' temporary files: one line naming the folder, no output left.
  std::string out = e2e::temp_dir() + "/x.pickle";
  e2e::Spec no_tmp;
  no_tmp.argv = {e2e::cli(), "export", "--torch-snapshot", out, trace};
  no_tmp.env = {{"TMPDIR", "/nonexistent-vramtrace-tmp"}};
  no_tmp.preload = false;
  e2e::Result r = e2e::run(no_tmp);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: cannot create a temporary file for the actions in /nonexistent-vramtrace-tmp (TMPDIR chooses "
                 "another folder)\n");
  CHECK(access(out.c_str(), F_OK) != 0);
}

// A job directory: one pickle per trace into the output directory (made 0700), other files passed over.
TEST_CASE("export --torch-snapshot of a job directory writes one pickle per trace") {
  std::string job = e2e::temp_dir();
  torch_trace(job);  // torch.trace
  crafted::CraftedTrace t;
  t.process({"./app"}, "/usr/bin/app");
  t.device(0, 16ull << 30, "GPU");
  t.alloc(A, 3 * MiB);
  t.write(job + "/rank1.trace");
  {
    std::ofstream readme(job + "/README");
    readme << "not a trace\n";
  }
  std::string out = e2e::temp_dir() + "/snapshots";
  e2e::Result r = e2e::run_cli({"export", "--torch-snapshot", out, job});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == out + "/rank1.pickle\n" + out + "/torch.pickle\n");
  CHECK(e2e::files_in(out).size() == 2);
  struct stat st;
  REQUIRE(stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  e2e::Spec py;
  py.argv = {"python3", "-c", "import pickle, sys; print(len(pickle.load(open(sys.argv[1], 'rb'))['segments']))", out + "/rank1.pickle"};
  py.preload = false;
  CHECK(e2e::run(py).out == "1\n");
}
