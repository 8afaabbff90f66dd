// include/vramtrace.h: live and peak bytes as vramtrace sees them, peak reset, regions in the
// trace and the report; and sensible answers when the library is not loaded.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness.h"

namespace {
// "name value" lines: the numeric ones (trace_path's value is a path: text_value).
std::map<std::string, long long> values(const std::string& out) {
  std::map<std::string, long long> m;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string k;
    long long v;
    if (l >> k >> v) m[k] = v;
  }
  return m;
}
std::string text_value(const std::string& out, const std::string& key) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}
}  // namespace

TEST_CASE("the live query API under vramtrace, and regions in the report") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("api_user")}, {{"VRAMTRACE_OUTPUT", dir}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto v = values(r.out);
  CHECK(v["active"] == 1);
  CHECK(v["live_after_two"] == 8 << 20);
  CHECK(v["live_after_free"] == 3 << 20);
  CHECK(v["peak"] == 8 << 20);
  CHECK(v["reset"] == 0);
  CHECK(v["peak_after_reset"] == 3 << 20);
  CHECK(v["peak_after_step"] == 4 << 20);
  // The trace's path: none before the first CUDA memory call, then the file this process writes.
  CHECK(v["trace_path_before"] == -1);
  CHECK(text_value(r.out, "trace_path") == e2e::files_in(dir).at(0));

  e2e::Spec s{{e2e::cli(), "report", e2e::files_in(dir).at(0), "--format", "json"}, {}};
  s.preload = false;
  r = e2e::run(s);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["regions"].size() == 2);
  CHECK(j["regions"][0]["name"] == "setup");  // begun before the first CUDA memory call
  CHECK(j["regions"][0]["peak_bytes"] == 8 << 20);
  CHECK(j["regions"][1]["name"] == "step");
  CHECK(j["regions"][1]["peak_above_start_bytes"] == 1 << 20);
  CHECK(j["regions"][1]["closed"] == true);
}

TEST_CASE("the API answers -1 when vramtrace is not loaded") {
  e2e::Spec s{{e2e::program("api_user")}, {}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  REQUIRE(r.exit_code == 0);
  auto v = values(r.out);
  CHECK(v["active"] == -1);
  CHECK(v["live_after_two"] == -1);
  CHECK(v["peak"] == -1);
  CHECK(v["reset"] == -1);
}
