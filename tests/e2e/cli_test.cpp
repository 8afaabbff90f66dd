// The `vramtrace` command line: run, dump, info.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;  // the CLI sets LD_PRELOAD itself
  return e2e::run(s);
}

}  // namespace

TEST_CASE("vramtrace run traces the command, returns its exit code and lists the traces") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "fork"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 2);
  CHECK(r.err.find("2 trace files") != std::string::npos);
  for (const auto& f : files) CHECK(r.err.find(f) != std::string::npos);

  r = cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "exit-code", "7"});
  CHECK(r.exit_code == 7);
  CHECK(r.err.find("1 trace file") != std::string::npos);

  r = cli({"run", "-o", dir, "--", "sh", "-c", "kill -9 $$"});
  CHECK(r.exit_code == 128 + 9);
  CHECK(r.err.find("no trace written") != std::string::npos);
}

TEST_CASE("vramtrace run: a fixed file path, usage errors and missing commands") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = cli({"run", "-o", dir + "/mine.trace", "--", e2e::program("lookup_direct")});
  CHECK(r.exit_code == 0);
  CHECK(e2e::files_in(dir) == std::vector<std::string>{dir + "/mine.trace"});

  r = cli({"run", "-o", "/nonexistent-dir/x.trace", "--", "true"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: output directory /nonexistent-dir does not exist\n");

  r = cli({"run"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no command given") != std::string::npos);

  r = cli({"run", "--", "/nonexistent-program"});
  CHECK(r.exit_code == 127);
  CHECK(r.err.find("cannot run /nonexistent-program") != std::string::npos);

  r = cli({"frobnicate"});
  CHECK(r.exit_code == 2);
}

TEST_CASE("vramtrace dump prints one JSON object per event") {
  std::string dir = e2e::temp_dir();
  REQUIRE(cli({"run", "-o", dir, "--", e2e::program("lookup_direct")}).exit_code == 0);
  std::string trace = e2e::files_in(dir).at(0);
  e2e::Result r = cli({"dump", trace});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  auto l = e2e::lines(r.out);
  REQUIRE(l.size() == 38);
  auto first = nlohmann::json::parse(l[0]);
  CHECK(first["op"] == "cuMemAlloc_v2");
  CHECK(first["result"] == 0);
  CHECK(first["size"] == 1 << 20);
  CHECK(first["address"].is_number_unsigned());
  CHECK(first["tid"].is_number());
  CHECK(first["t_ns"].is_number());
  CHECK(first["device"] == 0);
  auto oom = nlohmann::json::parse(l[33]);
  CHECK(oom["result"] == 2);
  CHECK(oom["size"] == 1ull << 40);
  CHECK(oom["total_bytes"] == 16ull << 30);
  CHECK(oom["free_bytes"].is_number_unsigned());
  auto create = nlohmann::json::parse(l[20]);
  CHECK(create["op"] == "cuMemCreate");
  CHECK(create["location"]["type"] == "device");
  CHECK(create["handle"].is_number_unsigned());

  r = cli({"dump", "--meta", trace});
  auto meta = nlohmann::json::parse(e2e::lines(r.out).at(0));
  CHECK(meta["record"] == "process");
  CHECK(meta["driver_version"] == 13000);

  r = cli({"info", trace});
  auto info = nlohmann::json::parse(r.out);
  CHECK(info["events"] == 38);
  CHECK(info["failed_events"] == 1);
  CHECK(info["closed_cleanly"] == true);
  CHECK(info["devices"].size() == 1);
}

TEST_CASE("vramtrace dump on a torn trace dumps what it holds and says so - bad paths are one line") {
  std::string dir = e2e::temp_dir();
  cli({"run", "-o", dir, "--", e2e::program("lifecycle"), "crash-kill", "100"});
  std::string trace = e2e::files_in(dir).at(0);
  e2e::Result r = cli({"dump", trace});
  CHECK(r.exit_code == 0);
  CHECK(e2e::lines(r.out).size() == 100);
  CHECK(r.err.find("without a clean close") != std::string::npos);

  r = cli({"dump", dir + "/missing.trace"});
  CHECK(r.exit_code == 1);
  CHECK(e2e::lines(r.err).size() == 1);
  CHECK(r.err.find("cannot open") != std::string::npos);
}
