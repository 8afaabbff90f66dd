// CUDA arrays end to end: tests/programs/array_formats.cpp creates arrays of each family of
// formats (plain, ...X4 with its channels in the format, block-compressed, YUV planes, sparse and
// deferred-mapping) and prints what each took of the simulated driver's memory. The trace must
// give each the bytes its texels need (interpose/entry/describe.h), and the peak their sum.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "figures.h"

TEST_CASE("CUDA arrays of every format family are the size the driver gives them, sparse ones none") {
  constexpr uint64_t MiB = 1 << 20;
  e2e::FigureRun run = e2e::run_figures({e2e::program("array_formats")});
  const std::map<std::string, uint64_t> want = {{"float4", 16 * MiB}, {"unorm8x4", 16 * MiB}, {"snorm16x4", 4 * MiB},
                                                {"bc1", 8 * MiB},     {"bc7", 4 * MiB},       {"nv12", 6 * MiB},
                                                {"sparse", 0},        {"deferred", 0},        {"unorm16x2", 4 * MiB}};
  for (const auto& [name, bytes] : want) {
    INFO(name);
    REQUIRE(run.figures.count(name));
    CHECK(run.figures.at(name) == bytes);  // the simulator's own model: the truth here
  }
  e2e::Trace t = e2e::load(run.trace);
  std::vector<uint64_t> sizes;
  for (const auto& e : t.events)
    if (e.op && (std::string(e.op->name) == "cuArray3DCreate_v2" || std::string(e.op->name) == "cuArrayCreate_v2"))
      sizes.push_back(e.size);
  const char* order[] = {"float4", "unorm8x4", "snorm16x4", "bc1", "bc7", "nv12", "sparse", "deferred", "unorm16x2"};
  REQUIRE(sizes.size() == 9);
  uint64_t sum = 0;
  for (size_t i = 0; i < 9; ++i) {
    INFO(order[i]);
    CHECK(sizes[i] == run.figures.at(order[i]));
    sum += sizes[i];
  }
  nlohmann::json j = e2e::cli_json(run.trace);
  CHECK(j["peak"]["by_device"][0]["bytes"].get<uint64_t>() == sum);
}
