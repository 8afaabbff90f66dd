// The driver section and the clean reports of machines without a driver, GPU or Python.
#include <catch2/catch.hpp>

#include "sandbox.h"

using namespace doctor_test;
using vt::doctor::Verdict;

TEST_CASE("no driver, no NVML, no Python: a clean report that says so, exit 1") {
  Sandbox s;
  s.options.python.clear();                    // look for python3 on PATH...
  s.set_env("PATH", s.root() + "/empty-bin");  // ...where there is none
  vt::doctor::Report r = s.run();

  const auto& lib = one(r, "driver.library");
  CHECK(lib.verdict == Verdict::problem);
  CHECK(contains(lib.message, "no CUDA driver"));
  CHECK(contains(lib.advice, "nvidia-smi"));
  CHECK(r.find("driver.init").empty());  // nothing more to say without a library
  CHECK(one(r, "python.interpreter").verdict == Verdict::skipped);
  CHECK(one(r, "nvml.library").verdict == Verdict::info);  // no driver: no NVML is expected
  CHECK(one(r, "gpus.none").message == "no driver: GPUs not listed");
  CHECK(one(r, "tracing.selftest").verdict == Verdict::skipped);
  CHECK(contains(one(r, "tracing.selftest").message, "skipped: no driver"));
  CHECK(one(r, "environment.none").verdict == Verdict::ok);
  CHECK(r.exit_code() == 1);
  CHECK(contains(vt::doctor::render_text(r), "Result: 1 problem"));
}

TEST_CASE("the simulated driver: where it was loaded from, its CUDA version, cuInit") {
  Sandbox s;
  s.use_fake_driver(12080);
  vt::doctor::Report r = s.run();
  const auto& lib = one(r, "driver.library");
  CHECK(lib.verdict == Verdict::ok);
  CHECK(lib.data["path"] == VT_FAKECUDA);
  const auto& ver = one(r, "driver.version");
  CHECK(ver.verdict == Verdict::ok);
  CHECK(ver.data["version"] == 12080);
  CHECK(ver.data["cuda"] == "12.8");
  CHECK(contains(ver.message, "supports CUDA up to 12.8"));
  const auto& init = one(r, "driver.init");
  CHECK(init.verdict == Verdict::ok);
  CHECK(init.data["devices"] == 1);
}

TEST_CASE("a driver that finds no GPU: cuInit's error and what to do") {
  Sandbox s;
  s.use_fake_driver();
  s.set_env("FAKECUDA_DEVICES", "0");
  vt::doctor::Report r = s.run();
  const auto& init = one(r, "driver.init");
  CHECK(init.verdict == Verdict::problem);
  CHECK(init.data["result"] == 100);
  CHECK(init.data["name"] == "CUDA_ERROR_NO_DEVICE");
  CHECK(contains(init.advice, "CUDA_VISIBLE_DEVICES"));
  CHECK(contains(one(r, "tracing.selftest").message, "skipped: cuInit fails"));
  CHECK(one(r, "gpus.none").verdict == Verdict::skipped);
  CHECK(r.exit_code() == 1);
}

TEST_CASE("a driver that crashes in cuInit is reported, and the doctor carries on") {
  Sandbox s;
  s.set_env("VRAMTRACE_DOCTOR_LIBCUDA", Sandbox::fake("crash/libcuda.so.1"));
  vt::doctor::Report r = s.run();
  const auto& lib = one(r, "driver.library");
  CHECK(lib.verdict == Verdict::problem);
  CHECK(contains(lib.message, "killed by signal 11"));
  // The later sections still ran.
  CHECK(one(r, "tracing.library").verdict == Verdict::ok);
  CHECK(r.exit_code() == 1);
}

TEST_CASE("the toolkit's stub libcuda is recognised and named as the cause") {
  Sandbox s;
  // The fake lives in a directory called stubs/, like the toolkit's lib64/stubs.
  s.set_env("VRAMTRACE_DOCTOR_LIBCUDA", Sandbox::fake("stubs/libcuda.so.1"));
  vt::doctor::Report r = s.run();
  const auto& lib = one(r, "driver.library");
  CHECK(lib.verdict == Verdict::problem);
  CHECK(contains(lib.advice, "stub"));
  const auto& init = one(r, "driver.init");
  CHECK(init.data["name"] == "CUDA_ERROR_STUB_LIBRARY");
  CHECK(contains(init.advice, "LD_LIBRARY_PATH"));
}
