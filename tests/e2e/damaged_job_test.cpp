// A job directory with damaged traces must not pass the CI gate: every damaged or unreadable
// trace is named on stderr and in the JSON `problems`, `check` fails with exit 2 unless
// --allow-damaged, and files that are not traces (a README, a report) are left alone.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "harness.h"
#include "trace_format.h"

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
void spill(const std::string& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), std::streamsize(data.size()));
}

// Three good traces of `oom_scenarios steps 4`, in `dir`.
void good_traces(const std::string& dir) {
  for (int i = 0; i < 3; ++i) {
    e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "steps", "4"}, {{"VRAMTRACE_OUTPUT", dir}}});
    REQUIRE(r.exit_code == 0);
  }
  REQUIRE(e2e::files_in(dir).size() == 3);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a job with a random-bytes trace and a truncated one fails the gate and names both") {
  std::string dir = e2e::temp_dir();
  good_traces(dir);
  std::string good = slurp(e2e::files_in(dir)[0]);
  std::mt19937 rng(7);
  std::string junk(100000, '\0');
  for (char& c : junk) c = char(rng());
  spill(dir + "/vramtrace.999991.trace", junk);                 // random bytes, named like a trace
  spill(dir + "/vramtrace.999992.trace", good.substr(0, 4096));  // cut inside its header
  spill(dir + "/README", "traces of the nightly run\n");         // not a trace: ignored
  spill(dir + "/report.json", "{}\n");

  e2e::Result r = cli({"check", dir, "--max-peak", "100GiB"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, dir + "/vramtrace.999991.trace: unreadable: not a vramtrace trace (bad magic)"));
  CHECK(has(r.err, dir + "/vramtrace.999992.trace: damaged: the trace was cut inside its header"));
  CHECK_FALSE(has(r.err, "README"));
  CHECK_FALSE(has(r.err, "report.json"));
  CHECK_FALSE(has(r.out, "ok:"));
  CHECK(has(r.out, "FAIL damaged: 2 damaged or unreadable traces (named on stderr)"));

  // --json: the same problems, ok false.
  r = cli({"check", dir, "--max-peak", "100GiB", "--json"});
  CHECK(r.exit_code == 2);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ok"] == false);
  REQUIRE(j["problems"].size() == 2);
  CHECK(j["problems"][0]["path"] == dir + "/vramtrace.999992.trace");
  CHECK(j["problems"][0]["kind"] == "damaged");
  CHECK(j["problems"][1]["path"] == dir + "/vramtrace.999991.trace");
  CHECK(j["problems"][1]["kind"] == "unreadable");

  // --allow-damaged: judged on what could be read, and still said.
  r = cli({"check", dir, "--max-peak", "100GiB", "--allow-damaged"});
  CHECK(r.exit_code == 0);
  CHECK(has(r.out, "ok: every limit holds (4 traces; 1 damaged, judged on what could be read; 1 unreadable, left out)"));
  CHECK(has(r.err, "vramtrace.999991.trace: unreadable"));
  r = cli({"check", dir, "--max-peak", "1MiB", "--allow-damaged"});
  CHECK(r.exit_code == 1);

  // report: stderr names them, the text says so at the top, the JSON lists them.
  r = cli({"report", dir});
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(has(r.err, "vramtrace.999991.trace: unreadable: not a vramtrace trace (bad magic)"));
  CHECK(has(r.err, "vramtrace.999992.trace: damaged: the trace was cut inside its header"));
  CHECK(has(r.out, "vramtrace job report: 4 traces, 1 damaged, 1 unreadable"));
  CHECK(has(r.out, "PROBLEMS"));
  CHECK(has(r.out, "  0 events, 0 failed, trace ended without a clean close\n"
                   "  note: the trace was cut inside its header (4096 of 65536 bytes): no records could be read"));
  CHECK(has(r.out, "0 B           0 B           0     ?       [damaged]"));
  r = cli({"report", dir, "--format", "json"});
  j = nlohmann::json::parse(r.out);
  CHECK(j["job"]["traces"] == 4);
  CHECK(j["job"]["damaged"] == 1);
  CHECK(j["job"]["unreadable"] == 1);
  CHECK(j["problems"].size() == 2);
  CHECK(j["reports"].size() == 4);

  // Without the damaged files the same directory passes, README and all.
  unlink((dir + "/vramtrace.999991.trace").c_str());
  unlink((dir + "/vramtrace.999992.trace").c_str());
  r = cli({"check", dir, "--max-peak", "100GiB"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(has(r.out, "ok: every limit holds (3 traces)"));
}

TEST_CASE("a trace cut at a chunk boundary or inside a chunk is damaged and not closed cleanly") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "steps", "4000"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  std::string path = e2e::files_in(dir).at(0);
  std::string good = slurp(path);
  vt::format::FileHeader h;
  REQUIRE(good.size() > sizeof h);
  memcpy(&h, good.data(), sizeof h);
  REQUIRE(h.chunks_allocated >= 2);
  size_t last = h.header_size + (h.chunks_allocated - 1) * h.chunk_size;  // the last claimed chunk
  std::string cut = dir + "/cut.trace";

  r = cli({"info", path});
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["closed_cleanly"] == true);
  CHECK(r.err.empty());
  uint64_t all = j["events"];

  spill(cut, good.substr(0, last));  // at a chunk boundary: the last chunk is gone
  r = cli({"info", cut});
  j = nlohmann::json::parse(r.out);
  CHECK(j["closed_cleanly"] == false);
  CHECK_FALSE(j["damage"].empty());
  CHECK(has(r.err, "cut.trace: damaged: the trace was cut short"));
  uint64_t at_boundary = j["events"];
  CHECK(at_boundary < all);
  r = cli({"check", cut, "--max-peak", "100GiB"});
  CHECK(r.exit_code == 2);
  CHECK(has(r.out, "FAIL damaged"));

  // Inside the last chunk: the records before the cut are kept.
  spill(cut, good.substr(0, last + 1000));
  r = cli({"info", cut});
  j = nlohmann::json::parse(r.out);
  CHECK(j["closed_cleanly"] == false);
  CHECK(j["events"].get<uint64_t>() > at_boundary);
  CHECK(has(r.err, "the records before the cut were kept"));
}

TEST_CASE("a directory of summaries with a hostile one: nested a million deep, or huge, is named and left out") {
  // A summary nested 100,000 deep crashed `report DIR` (serializing it again recursed per level);
  // a 100 MB one took ~2 GB of memory.
  std::string traces = e2e::temp_dir(), dir = e2e::temp_dir();
  good_traces(traces);
  auto files = e2e::files_in(traces);
  e2e::Result r = cli({"report", files[0], "--format", "json", "-o", dir + "/rank0.json"});
  REQUIRE(r.exit_code == 0);
  std::string good = slurp(dir + "/rank0.json");
  REQUIRE(good.size() > 2);
  const size_t n = 1000000;
  std::string deep = good.substr(0, good.rfind('}')) + ",\"zzz\":" + std::string(n, '[') + std::string(n, ']') + "}";
  spill(dir + "/rank1.json", deep);
  std::string huge = "{\"schema\":\"vramtrace.report/1\",\"x\":\"" + std::string(70 << 20, 'a') + "\"}";
  spill(dir + "/rank2.json", huge);
  for (const char* format : {"text", "json"}) {
    r = cli({"report", dir, "--format", format});
    INFO(format << ": " << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);  // the readable rank is reported; the others are named
    CHECK(has(r.err, dir + "/rank1.json: unreadable: nested more than 64 deep: not a vramtrace report"));
    CHECK(has(r.err, dir + "/rank2.json: unreadable: larger than 64 MiB: not a report"));
  }
}
