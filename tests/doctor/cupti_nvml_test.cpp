// CUPTI (found, versioned, matched to the runtimes) and NVML (versions, failures, agreement with
// libcuda).
#include <catch2/catch.hpp>

#include "sandbox.h"

using namespace doctor_test;
using vt::doctor::Verdict;

TEST_CASE("no CUPTI anywhere: a warning, not a problem") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.copy("site-packages/nvidia/cu13/lib/libcudart.so.13", Sandbox::fake("cudart130/libcudart.so.13"));
  vt::doctor::Report r = s.run();
  const auto& c = one(r, "cupti.missing");
  CHECK(c.verdict == Verdict::warning);
  CHECK(contains(c.advice, "nvidia-cuda-cupti"));
  CHECK(r.find("cupti.library").empty());
  CHECK(r.exit_code() == 0);
}

TEST_CASE("CUPTI beside the runtime, its version asked from the library, matching the runtime") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.copy("site-packages/nvidia/cuda_runtime/lib/libcudart.so.12", Sandbox::fake("cudart124/libcudart.so.12"));
  s.copy("site-packages/nvidia/cuda_runtime/lib/libcupti.so.12", Sandbox::fake("cupti12/libcupti.so.12"));
  vt::doctor::Report r = s.run();
  const auto& c = one(r, "cupti.library");
  CHECK(c.verdict == Verdict::ok);
  CHECK(c.data["api_version"] == 24);
  CHECK(c.data["cuda_major"] == 12);
  CHECK(c.data["version_source"] == "cuptiGetVersion");
  CHECK(c.data["matches_runtime"] == true);
  CHECK(r.find("cupti.match").empty());
  CHECK(r.find("cupti.missing").empty());
}

TEST_CASE("CUPTI of another major than the runtime: cupti.match warns") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.copy("site-packages/nvidia/cuda_runtime/lib/libcudart.so.12", Sandbox::fake("cudart124/libcudart.so.12"));
  s.copy("site-packages/nvidia/cuda_cupti/lib/libcupti.so.13", Sandbox::fake("cupti13/libcupti.so.13"));
  vt::doctor::Report r = s.run();
  const auto& lib = one(r, "cupti.library");
  CHECK(lib.data["cuda_major"] == 13);
  CHECK(lib.data["matches_runtime"] == false);
  CHECK(lib.data["owners"] == nlohmann::json{"nvidia/cuda_cupti"});
  const auto& m = one(r, "cupti.match");
  CHECK(m.verdict == Verdict::warning);
  CHECK(m.data["cuda_major"] == 12);
  CHECK(contains(m.advice, "nvidia-cuda-cupti-cu12"));
}

TEST_CASE("VRAMTRACE_DOCTOR_LIBCUPTI names the only CUPTI considered") {
  Sandbox s;
  s.copy("usr/local/cuda/lib64/libcupti.so.12", Sandbox::fake("cupti12/libcupti.so.12"));
  s.set_env("VRAMTRACE_DOCTOR_LIBCUPTI", Sandbox::fake("cupti13/libcupti.so.13"));
  vt::doctor::Report r = s.run();
  const auto& c = one(r, "cupti.library");
  CHECK(c.data["path"] == Sandbox::fake("cupti13/libcupti.so.13"));
  CHECK(c.data["api_version"] == 130001);
}

TEST_CASE("NVML: versions, and a working one raises no warning") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  vt::doctor::Report r = s.run();
  const auto& n = one(r, "nvml.library");
  CHECK(n.verdict == Verdict::ok);
  CHECK(n.data["driver_version"] == "580.65.06");
  CHECK(n.data["nvml_version"] == "13.580.65.06");
  CHECK(n.data["cuda_driver_version"] == 13000);
  CHECK(r.find("nvml.agreement").empty());
  CHECK(contains(one(r, "driver.version").message, "driver 580.65.06 supports CUDA up to 13.0"));
}

TEST_CASE("NVML fails to initialise after a driver upgrade: a problem with the fix") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  s.set_env("FAKENVML_INIT_RESULT", "18");
  vt::doctor::Report r = s.run();
  const auto& n = one(r, "nvml.library");
  CHECK(n.verdict == Verdict::problem);
  CHECK(contains(n.message, "Driver/library version mismatch (18)"));
  CHECK(contains(n.advice, "reboot"));
  CHECK(r.exit_code() == 1);
}

TEST_CASE("NVML and libcuda disagree on the CUDA version: a foreign libcuda is loaded") {
  Sandbox s;
  s.use_fake_driver(12080);
  s.use_nvml();  // reports 13.0
  vt::doctor::Report r = s.run();
  const auto& a = one(r, "nvml.agreement");
  CHECK(a.verdict == Verdict::warning);
  CHECK(a.data["nvml_cuda"] == 13000);
  CHECK(a.data["libcuda_cuda"] == 12080);
}

TEST_CASE("no NVML while the driver works: a warning") {
  Sandbox s;
  s.use_fake_driver(13000);
  vt::doctor::Report r = s.run();
  CHECK(one(r, "nvml.library").verdict == Verdict::warning);
}
