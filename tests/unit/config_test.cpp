// VRAMTRACE_* parsing: patterns, directories, bad values.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "config.h"

using vt::Config;

TEST_CASE("output patterns expand %p, %h and %%") {
  char out[256];
  const char* why = nullptr;
  REQUIRE(vt::expand_pattern("/tmp/t.%p.%h.100%%", 42, "node7", out, sizeof out, &why));
  CHECK(std::string(out) == "/tmp/t.42.node7.100%");
  CHECK_FALSE(vt::expand_pattern("/tmp/%q", 42, "h", out, sizeof out, &why));
  CHECK(std::string(why).find("unknown %-escape") != std::string::npos);
  CHECK_FALSE(vt::expand_pattern("/tmp/abcdefgh", 1, "h", out, 8, &why));
  CHECK(std::string(why) == "path too long");
}

TEST_CASE("VRAMTRACE_OUTPUT: directory, file, unset, empty, bad escape, disable") {
  Config c;
  setenv("VRAMTRACE_OUTPUT", "/tmp", 1);
  REQUIRE(vt::load_config(&c, 77));
  CHECK(std::string(c.path) == "/tmp/vramtrace.77.trace");

  setenv("VRAMTRACE_OUTPUT", "/tmp/run-%p.trace", 1);
  REQUIRE(vt::load_config(&c, 77));
  CHECK(std::string(c.path) == "/tmp/run-77.trace");

  setenv("VRAMTRACE_OUTPUT", "/tmp/fixed.trace", 1);
  REQUIRE(vt::load_config(&c, 77));

  unsetenv("VRAMTRACE_OUTPUT");
  REQUIRE(vt::load_config(&c, 5));
  CHECK(std::string(c.path) == "./vramtrace.5.trace");

  setenv("VRAMTRACE_OUTPUT", "", 1);
  CHECK_FALSE(vt::load_config(&c, 5));
  setenv("VRAMTRACE_OUTPUT", "/tmp/%z", 1);
  CHECK_FALSE(vt::load_config(&c, 5));

  setenv("VRAMTRACE_OUTPUT", "/tmp", 1);
  setenv("VRAMTRACE_DISABLE", "1", 1);
  CHECK_FALSE(vt::load_config(&c, 5));
  unsetenv("VRAMTRACE_DISABLE");
  setenv("VRAMTRACE_SESSION", "abc", 1);
  REQUIRE(vt::load_config(&c, 5));
  CHECK(std::string(c.session) == "abc");
  unsetenv("VRAMTRACE_SESSION");
  unsetenv("VRAMTRACE_OUTPUT");
}

#include "compare.h"

TEST_CASE("sizes: bytes and units, malformed values named") {
  uint64_t b = 0;
  std::string why;
  REQUIRE(vt::analyzer::parse_size("512MiB", &b, &why));
  CHECK(b == 512ull << 20);
  REQUIRE(vt::analyzer::parse_size("4GB", &b, &why));
  CHECK(b == 4000000000ull);
  REQUIRE(vt::analyzer::parse_size("1.5GiB", &b, &why));
  CHECK(b == 3ull << 29);
  REQUIRE(vt::analyzer::parse_size("1048576", &b, &why));
  CHECK(b == 1048576);
  REQUIRE(vt::analyzer::parse_size("2 gib", &b, &why));
  CHECK(b == 2ull << 30);
  CHECK_FALSE(vt::analyzer::parse_size("", &b, &why));
  CHECK_FALSE(vt::analyzer::parse_size("-1GiB", &b, &why));
  CHECK_FALSE(vt::analyzer::parse_size("12 parsecs", &b, &why));
  CHECK(why.find("'12 parsecs' has an unknown unit") == 0);
  CHECK_FALSE(vt::analyzer::parse_size("0.5", &b, &why));
  CHECK_FALSE(vt::analyzer::parse_size("1e30GiB", &b, &why));
}
