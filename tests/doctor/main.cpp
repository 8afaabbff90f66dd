// The doctor tests' runner. Like `vramtrace` itself, this binary doubles as the tracing
// self-test's child: the doctor re-runs /proc/self/exe with kSelfTestArg under LD_PRELOAD.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <string>

#include "doctor.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == vt::doctor::kSelfTestArg) return vt::doctor::selftest_child_main(argc, argv);
  return Catch::Session().run(argc, argv);
}
