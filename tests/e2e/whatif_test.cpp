// `vramtrace whatif` and `vramtrace fit` on crafted traces of PyTorch's block layer: a
// fragmentation OOM the model reproduces under the run's settings and that expandable segments
// would have avoided (worked out by hand below), the report's remedy citing it, fit's line through
// three runs, and the bad inputs each getting one line.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../crafted_trace.h"
#include "harness.h"

using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1ull << 20;

// A 64 MiB device. Three 20 MiB segments, each holding three 6 MiB tensors (torch alloc records:
// 6 MiB asked for); two of each three freed: 18 MiB allocated, 60 reserved, 14 MiB free in each
// segment. Then 16 MiB is asked for: no cached block is that large, cudaMalloc(16 MiB) fails
// (60 + 16 > 64), the flush frees nothing (every segment holds a tensor): OutOfMemoryError.
// Under expandable_segments:True the nine tensors are packed in three 20 MiB pages and the
// last two freed ones plus the tail leave 18 MiB together: the request fits.
std::string fragmentation_trace(const std::string& dir) {
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3.13");
  t.device(0, 64 * MiB, "GPU");
  t.thread(100, "MainThread", true);
  t.pycode(1, 13, 7, "/src/train.py", "<module>");
  t.pycode(2, 13, 19, "/src/train.py", "<module>");
  using vt::format::python_frame;
  t.stack(1, {python_frame(1, 0, true)});
  t.stack(2, {python_frame(2, 0, true)});
  const uint64_t seg[3] = {0x7f0000000000ull, 0x7f0002000000ull, 0x7f0004000000ull};
  uint64_t allocated = 0, reserved = 0;
  for (uint64_t s : seg) {
    t.alloc(s, 20 * MiB, 1);
    reserved += 20 * MiB;
    for (int i = 0; i < 3; i++) {
      allocated += 6 * MiB;
      t.torch_alloc(0, s + uint64_t(i) * 6 * MiB, 6 * MiB, 6 * MiB, allocated, reserved, 1);
    }
  }
  for (uint64_t s : seg)
    for (int i = 1; i < 3; i++) {
      allocated -= 6 * MiB;
      t.torch_block(0, s + uint64_t(i) * 6 * MiB, -int64_t(6 * MiB), allocated, reserved, 1);
    }
  t.alloc(0, 16 * MiB, 2, 0, 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 4 * MiB, 64 * MiB);
  t.torch_oom(0, 16 * MiB, allocated, reserved, 4 * MiB, 64 * MiB, 2);
  std::string path = dir + "/frag.trace";
  t.write(path);
  return path;
}

// One run of a "script" at batch b: a weight of 4 MiB, an activation of b MiB, freed, then an
// output of 2b MiB kept.
std::string batch_trace(const std::string& dir, uint64_t b) {
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3.13");
  t.device(0, 1024 * MiB, "GPU");
  t.thread(100, "MainThread", true);
  t.pycode(1, 13, 3, "/src/train.py", "<module>");
  t.pycode(2, 13, 4, "/src/train.py", "<module>");
  t.pycode(3, 13, 5, "/src/train.py", "<module>");
  using vt::format::python_frame;
  t.stack(1, {python_frame(1, 0, true)});
  t.stack(2, {python_frame(2, 0, true)});
  t.stack(3, {python_frame(3, 0, true)});
  const uint64_t w = 0x7f0000000000ull, a = 0x7f0010000000ull, o = 0x7f0020000000ull;
  t.alloc(w, 20 * MiB, 1);
  t.torch_alloc(0, w, 4 * MiB, 4 * MiB, 4 * MiB, 20 * MiB, 1);
  uint64_t seg_a = (b * MiB + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
  t.alloc(a, seg_a, 2);
  t.torch_alloc(0, a, b * MiB, b * MiB, 4 * MiB + b * MiB, 20 * MiB + seg_a, 2);
  t.torch_block(0, a, -int64_t(b * MiB), 4 * MiB, 20 * MiB + seg_a, 2);
  t.alloc(o, 2 * b * MiB, 3);
  t.torch_alloc(0, o, 2 * b * MiB, 2 * b * MiB, 4 * MiB + 2 * b * MiB, 20 * MiB + seg_a + 2 * b * MiB, 3);
  std::string path = dir + "/b" + std::to_string(b) + ".trace";
  t.write(path);
  return path;
}

}  // namespace

TEST_CASE("whatif: a fragmentation OOM replayed: the run's settings reproduce it, expandable segments avoid it") {
  std::string trace = fragmentation_trace(e2e::temp_dir());
  e2e::Result r = e2e::run_cli({"whatif", trace, "--alloc-conf", "expandable_segments:True", "--alloc-conf",
                                "max_split_size_mb:32", "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["schema"] == "vramtrace.whatif/1");
  CHECK(j["device_memory_bytes"] == 64 * MiB);
  CHECK(j["recorded"]["peak_reserved_bytes"] == 60 * MiB);
  CHECK(j["recorded"]["peak_allocated_bytes"] == 54 * MiB);
  CHECK(j["recorded"]["requests_known"] == 9);
  REQUIRE(j["recorded"]["ooms"].size() == 1);
  CHECK(j["recorded"]["ooms"][0]["where"] == "train.py:19 in <module>");
  const json& base = j["model_check"];
  CHECK(base["peak_reserved_bytes"] == 60 * MiB);
  CHECK(base["ooms"][0]["would_happen"] == true);
  REQUIRE(j["settings"].size() == 2);
  const json& exp = j["settings"][0];
  CHECK(exp["alloc_conf"] == "expandable_segments:True");
  CHECK(exp["ooms"][0]["would_happen"] == false);
  CHECK(exp["rank"] == 1);
  CHECK(exp["peak_reserved_bytes"] == 60 * MiB);  // the 16 MiB fits in what the three pages leave
  CHECK(j["settings"][1]["ooms"][0]["would_happen"] == true);

  // backend:cudaMallocAsync (the driver's pool, approximated): 54 MiB in use at most, 18 MiB
  // after the frees: the 16 MiB request fits in what the pool kept (54 MiB reserved, 64 MiB device).
  e2e::Result async = e2e::run_cli({"whatif", trace, "--alloc-conf", "backend:cudaMallocAsync", "--format", "json"});
  REQUIRE(async.exit_code == 0);
  json a = json::parse(async.out);
  CHECK(a["settings"][0]["peak_reserved_bytes"] == 54 * MiB);
  CHECK(a["settings"][0]["ooms"][0]["would_happen"] == false);
  bool said = false;
  for (const json& l : a["limits"]) said |= l.get<std::string>().find("cudaMallocAsync is approximate") != std::string::npos;
  CHECK(said);

  e2e::Result text = e2e::run_cli({"whatif", trace, "--sweep"});
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("best: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True") != std::string::npos);
  CHECK(text.out.find("the OOM at train.py:19 in <module> (16.0 MiB): would not happen") != std::string::npos);
}

TEST_CASE("whatif: the OOM's remedy naming expandable_segments cites the replay") {
  std::string trace = fragmentation_trace(e2e::temp_dir());
  e2e::Result r = e2e::run_cli({"report", trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  REQUIRE(j["ooms"].size() == 1);
  const json& o = j["ooms"][0];
  CHECK(o["verdict"] == "fragmentation");
  REQUIRE(o.contains("whatif"));
  bool cited = false;
  for (const json& c : o["whatif"])
    if (c["alloc_conf"] == "expandable_segments:True") cited = c["would_happen"] == false;
  CHECK(cited);
  bool in_text = false;
  for (const json& m : o["remedies"])
    in_text |= m.get<std::string>().find("this OOM would not have happened") != std::string::npos;
  CHECK(in_text);
}

TEST_CASE("fit: three runs at batch 2, 4, 8 predict batch 32 and the largest batch that fits") {
  std::string dir = e2e::temp_dir();
  std::vector<std::string> args = {"fit", batch_trace(dir, 2), batch_trace(dir, 4), batch_trace(dir, 8), "--batch", "2,4,8",
                                   "--target", "32", "--max-batch", "--format", "json"};
  e2e::Result r = e2e::run_cli(args);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(r.out);
  CHECK(j["schema"] == "vramtrace.fit/1");
  CHECK(j["matched_requests"] == 3);
  CHECK(j["linear"] == true);
  CHECK(j["check"]["allocated_error"] == 0.0);
  // At 32: the 4 MiB weight and the 64 MiB output live at the end (the 32 MiB activation freed).
  CHECK(j["target"]["peak_allocated_bytes"] == (4 + 64) * MiB);
  CHECK(j["target"]["fits"] == true);
  // 1 GiB: the output's 2b MiB segment beside the weight's 20 MiB one; the freed activation's
  // segment (b) is flushed when they do not fit all three: 20 + 2b <= 1024, b = 502 the last.
  CHECK(j["max_batch"] == 502);
  // `check` gates on the prediction: reserved at 32 is 20 + 32 + 64 MiB (the activation's segment
  // cached beside the output's).
  CHECK(j["target"]["peak_reserved_bytes"] == 116 * MiB);
  std::vector<std::string> gate = {"check", args[1], args[2], args[3], "--predict-batch", "2,4,8", "--predict-target", "32"};
  e2e::Result over = e2e::run_cli([&] { auto g = gate; g.insert(g.end(), {"--max-reserved", "100MiB", "--no-oom"}); return g; }());
  CHECK(over.exit_code == 1);
  CHECK(over.out.find("FAIL max_reserved: batch 32 (predicted from 3 runs): PyTorch's peak reserved 116 MiB > 100 MiB") !=
        std::string::npos);
  CHECK(over.out.find("no_oom") == std::string::npos);
  e2e::Result under = e2e::run_cli([&] { auto g = gate; g.insert(g.end(), {"--max-reserved", "200MiB"}); return g; }());
  CHECK(under.exit_code == 0);
  e2e::Result bad = e2e::run_cli([&] { auto g = gate; g.insert(g.end(), {"--max-peak", "200MiB"}); return g; }());
  CHECK(bad.exit_code == 2);
  CHECK(e2e::lines(bad.err).size() == 1);
}

TEST_CASE("whatif and fit: bad input is one line and exit 2") {
  std::string dir = e2e::temp_dir();
  std::string trace = fragmentation_trace(dir);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"whatif", trace},
           {"whatif", trace, "--alloc-conf", "max_split_size_mb:20"},
           {"whatif", trace, "--alloc-conf", "expandable_segments:yes"},
           {"whatif", trace, "--alloc-conf", ""},
           {"whatif", dir + "/missing.trace", "--sweep"},
           {"whatif", trace, "--sweep", "--device", "3"},
           {"whatif", trace, "--sweep", "--device-memory", "lots"},
           {"fit", trace, "--batch", "1", "--target", "2"},
           {"fit", trace, trace, "--batch", "1,1", "--target", "2"},
           {"fit", trace, trace, "--batch", "1,2,", "--target", "2"},
           {"check", trace, trace, "--predict-batch", "1,,2", "--predict-target", "4", "--no-oom"},
           {"fit", trace, trace, "--batch", "1,2"},
       }) {
    e2e::Result r = e2e::run_cli(args);
    INFO(args[0] + " " + (args.size() > 2 ? args[2] + " " + args.back() : ""));
    CHECK(r.exit_code == 2);
    CHECK(e2e::lines(r.err).size() == 1);
    CHECK(r.out.empty());
  }
  // A file that is not a trace, and a trace without PyTorch's blocks.
  std::ofstream(dir + "/text.trace") << "not a trace\n";
  crafted::CraftedTrace t;
  t.process({"a.out"}, "/bin/a.out");
  t.device(0, 64 * MiB, "GPU");
  t.alloc(0x7f0000000000ull, 2 * MiB);
  t.write(dir + "/plain.trace");
  for (const std::string& f : {dir + "/text.trace", dir + "/plain.trace"}) {
    e2e::Result r = e2e::run_cli({"whatif", f, "--sweep"});
    CHECK(r.exit_code == 2);
    CHECK(e2e::lines(r.err).size() == 1);
  }
}
