// VRAMTRACE_* parsing: patterns, directories, bad values.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "env_config.h"

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
  // The current directory, as the directory this process started in (the recorder's
  // load_environment.cpp, linked into this test, resolves relative outputs against it).
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd));
  CHECK(std::string(c.path) == std::string(cwd) + "/vramtrace.5.trace");

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
