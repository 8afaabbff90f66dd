// `vramtrace doctor` through the real binary: exit status, --json on stdout, --python, and the
// self-test with the CLI itself as the traced child.
#include <catch2/catch.hpp>

#include "isolate.h"
#include "sandbox.h"

using namespace doctor_test;

namespace {

vt::doctor::ProgramResult cli(std::vector<std::string> args) {
  const char* other = getenv("VRAMTRACE_TEST_CLI");  // tests/sanitizers.sh: a sanitized build
  args.insert(args.begin(), other && *other ? other : VT_CLI);
  return vt::doctor::run_program(args, {}, 300);
}

}  // namespace

TEST_CASE("vramtrace doctor --json: the exit status matches the report") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  auto p = cli({"doctor", "--json", "--python", s.options.python});
  INFO(p.err);
  REQUIRE(p.started);
  nlohmann::json j = nlohmann::json::parse(p.out);
  CHECK(p.exit_code == j["exit_code"].get<int>());
  CHECK(p.exit_code == 0);
  bool selftest_ok = false;
  for (const auto& c : j["checks"])
    if (c["id"] == "tracing.selftest") selftest_ok = c["verdict"] == "ok";
  CHECK(selftest_ok);  // the CLI re-ran itself as the traced child
}

TEST_CASE("vramtrace doctor: text on stdout, exit 1 without a driver, --python checked") {
  Sandbox s;
  auto p = cli({"doctor", "--python", s.root() + "/no/python"});
  CHECK(p.exit_code == 1);
  CHECK(contains(p.out, "vramtrace doctor: can this machine run and trace CUDA programs?"));
  CHECK(contains(p.out, "no CUDA driver"));
  CHECK(contains(p.out, "no Python at " + s.root() + "/no/python"));
  CHECK(p.err.empty());
}
