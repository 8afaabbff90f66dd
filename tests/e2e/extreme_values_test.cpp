// Numbers at the edge of their types, as a crafted trace can hold them: a site of 2^63 bytes, a
// device ordinal of 2^31 - 1, a time 2^63 ns after the start. Every command gives a sane answer;
// under tests/sanitizers.sh (an ASan + UBSan CLI) any overflow aborts the command.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "../crafted_trace.h"
#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  s.timeout_s = 30;
  return e2e::run(s);
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST_CASE("a site of 2^63 bytes: diff and check clamp the change, nothing overflows") {
  std::string dir = e2e::temp_dir();
  std::string none = dir + "/none.trace", big = dir + "/big.trace";
  {
    crafted::CraftedTrace t;
    t.process({"none"}, "/bin/none");
    t.write(none);
  }
  {
    crafted::CraftedTrace t;
    t.process({"big"}, "/bin/big");
    t.stack(1, {0x400100});
    t.alloc(0x1000, 1ull << 63, 1);
    t.write(big);
  }
  e2e::Result r = cli({"diff", none, big, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["peak"]["new_bytes"].get<uint64_t>() == 1ull << 63);
  CHECK(j["peak"]["change_bytes"].get<int64_t>() == INT64_MAX);  // 2^63 does not fit: clamped
  REQUIRE(j["sites"].size() == 1);
  CHECK(j["sites"][0]["peak_change_bytes"].get<int64_t>() == INT64_MAX);
  r = cli({"diff", big, none, "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["sites"][0]["peak_change_bytes"].get<int64_t>() == -INT64_MAX);
  r = cli({"diff", none, big});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("peak: 0 B -> 8192 PiB (+8192 PiB)") == 0);
  r = cli({"diff", big, none});
  CHECK(r.out.find("(-8192 PiB)") != std::string::npos);
  r = cli({"check", big, "--baseline", none, "--max-site-growth", "1", "--max-peak", "1GiB"});
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL max_peak: peak 8192 PiB (9223372036854775808 bytes)") == 0);
}

TEST_CASE("a device ordinal of 2^31 - 1 and a time 2^63 ns away export to valid Perfetto JSON") {
  std::string dir = e2e::temp_dir();
  std::string path = dir + "/edge.trace", out = dir + "/edge.json";
  crafted::CraftedTrace t;
  t.process({"edge"}, "/bin/edge");
  t.device(INT32_MAX, 16ull << 30, "far GPU");
  t.alloc(0x1000, 1 << 20, 0, INT32_MAX - 1);  // recorded as ordinal + 1
  t.write(path);
  e2e::Result r = cli({"export", path, "--perfetto", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(slurp(out));
  bool sort_index = false;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "process_sort_index" && e["pid"] == INT32_MAX) sort_index = e["args"]["sort_index"] == 2147483648ll;
  CHECK(sort_index);
  // PyTorch's snapshot lists actions by device ordinal (0-127 in PyTorch): that ordinal's are left
  // out and said, not written after 2^31 empty lists (a 2 GB file, before).
  std::string pickle = dir + "/edge.pickle";
  r = cli({"export", "--torch-snapshot", pickle, path});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::string snap = slurp(pickle);
  CHECK(snap.size() < 4096);
  CHECK(snap.find("2 actions and 1 segments on device ordinals above 127 left out") != std::string::npos);

  // A failed allocation (always drawn, with its time) 2^63 ns after the trace started.
  std::string far = dir + "/far.trace";
  std::string bytes;
  {
    crafted::CraftedTrace f;
    f.process({"far"}, "/bin/far");
    f.alloc(0, 1ull << 40, 0, 0, 2, 1, 2);
    bytes = f.bytes();
  }
  // Move the chunk's base time to 2^63: its records then lie about 2^63 ns after the start
  // (a signed difference overflows).
  vt::format::ChunkHeader ch;
  memcpy(&ch, &bytes[65536], sizeof ch);
  ch.base_ns = 1ull << 63;
  memcpy(&bytes[65536], &ch, sizeof ch);
  {
    std::ofstream o(far, std::ios::binary | std::ios::trunc);
    o.write(bytes.data(), std::streamsize(bytes.size()));
  }
  r = cli({"export", far, "--perfetto", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(slurp(out));
  bool failed = false;
  for (const auto& e : j["traceEvents"])
    if (e.contains("name") && e["name"].get<std::string>().rfind("FAILED", 0) == 0) failed = true;
  CHECK(failed);
  r = cli({"report", far});
  CHECK(r.exit_code == 0);
}

// Times in the export are microseconds with every nanosecond kept: written digit by digit, not
// with printf, so each digit's place is checked here.
TEST_CASE("export --perfetto: an event's time is its microseconds with three exact decimals") {
  std::string dir = e2e::temp_dir();
  std::string path = dir + "/ns.trace", out = dir + "/ns.json";
  std::string bytes;
  {
    crafted::CraftedTrace t;
    t.process({"ns"}, "/bin/ns");
    t.alloc(0, 1ull << 40, 0, 0, 2, 1, 2);  // a failed allocation: always drawn, 200 ns after the start
    bytes = t.bytes();
  }
  // Every record of the chunk 1,234,567 ns later: the failed allocation at 1,234,767 ns.
  vt::format::ChunkHeader ch;
  memcpy(&ch, &bytes[65536], sizeof ch);
  ch.base_ns += 1234567;
  memcpy(&bytes[65536], &ch, sizeof ch);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  e2e::Result r = cli({"export", path, "--perfetto", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string text = slurp(out);
  INFO(text);
  CHECK(text.find("\"cat\":\"oom\",\"pid\":") != std::string::npos);
  CHECK(text.find(",\"ts\":1234.767,") != std::string::npos);
}

// A program that fails thousands of times (catching the error and trying again smaller): the
// report details the first 64 OOMs and the latest, counts the ones between, and its memory and
// size stay bounded; `check --no-oom` and the summary count every one.
TEST_CASE("report: 5000 OOMs, the first 64 and the latest detailed, the rest counted") {
  constexpr uint64_t MiB = 1ull << 20;
  constexpr int kOoms = 5000;
  crafted::CraftedTrace t;
  t.process({"python3", "train.py"}, "/usr/bin/python3");
  t.device(0, 16ull << 30, "GPU");
  t.thread(100, "MainThread");
  t.alloc(0x7f0000000000ull, 4ull << 30);  // what holds the device
  for (int i = 1; i <= kOoms; ++i) t.alloc(0, uint64_t(i) * MiB, 0, 0, 2, 1ull << 30, 16ull << 30);
  std::string path = e2e::temp_dir() + "/storm.trace";
  t.write(path);
  e2e::Result r = cli({"report", path, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["ooms"].size() == 65);
  CHECK(j["ooms"][0]["requested_bytes"] == 1 * MiB);
  CHECK(j["ooms"][63]["requested_bytes"] == 64 * MiB);
  CHECK(j["ooms"][64]["requested_bytes"] == uint64_t(kOoms) * MiB);  // the latest
  CHECK(j["ooms_omitted"] == kOoms - 65);
  CHECK(r.out.size() < 4u << 20);  // ~14 KB per OOM detailed, not per OOM
  e2e::Result text = cli({"report", path});
  CHECK(text.out.find("OUT OF MEMORY (5000 failed allocations)") != std::string::npos);
  CHECK(text.out.find("4935 more failed allocations between, not detailed (the first 64 and the latest are)") !=
        std::string::npos);
  CHECK(text.out.find("#5000 at") != std::string::npos);
  e2e::Result gate = cli({"check", path, "--no-oom"});
  CHECK(gate.exit_code == 1);
  CHECK(gate.out.find("5000 failed allocations") != std::string::npos);
}
