// The GPU list: from NVML with processes (both API generations), or from the driver.
#include <catch2/catch.hpp>

#include "sandbox.h"

using namespace doctor_test;
using vt::doctor::Verdict;

namespace {

void check_processes(const vt::doctor::Check& gpu) {
  const auto& procs = gpu.data["processes"];
  REQUIRE(procs.size() == 2);
  CHECK(procs[0]["pid"] == 4242);
  CHECK(procs[0]["name"] == "python3");
  CHECK(procs[0]["used_bytes"] == 2147483648ull);
  CHECK(procs[1]["pid"] == 4343);
  CHECK(procs[1]["name"] == "trainer");
  CHECK(procs[1]["used_bytes"].is_null());
  REQUIRE(gpu.details.size() >= 2);
  CHECK(gpu.details[0] == "pid 4242 python3 (compute): 2.00 GiB");
  CHECK(contains(gpu.details[1], "pid 4343 trainer (compute): memory not reported"));
}

}  // namespace

TEST_CASE("a GPU with processes, from NVML") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  s.set_env("FAKENVML_GRAPHICS", "4444:268435456:Xorg;4242:-:python3");
  vt::doctor::Report r = s.run();
  const auto& gpu = one(r, "gpus.device");
  CHECK(gpu.verdict == Verdict::ok);
  CHECK(gpu.data["source"] == "nvml");
  CHECK(gpu.data["name"] == "Fake GPU 0 80GB");
  CHECK(gpu.data["uuid"] == "GPU-fake-0");
  CHECK(gpu.data["total_bytes"] == 85899345920ull);
  CHECK(gpu.data["used_bytes"] == 3221225472ull);
  CHECK(gpu.data["free_bytes"] == 85899345920ull - 3221225472ull);
  CHECK(gpu.data["compute_capability"] == "9.0");
  CHECK(contains(gpu.message, "GPU 0: Fake GPU 0 80GB, 80.0 GiB: 3.00 GiB used (3 processes), 77.0 GiB free"));
  const auto& procs = gpu.data["processes"];
  REQUIRE(procs.size() == 3);
  CHECK(procs[0]["type"] == "compute+graphics");  // 4242 does both: listed once
  CHECK(procs[2]["pid"] == 4444);
  CHECK(procs[2]["type"] == "graphics");
  CHECK(procs[2]["used_bytes"] == 268435456);
}

TEST_CASE("an NVML from before R470: the old function names and 16-byte process rows") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml(/*old_api=*/true);
  vt::doctor::Report r = s.run();
  CHECK(one(r, "nvml.library").verdict == Verdict::ok);
  const auto& gpu = one(r, "gpus.device");
  CHECK(gpu.data["source"] == "nvml");
  check_processes(gpu);
  CHECK(gpu.data.contains("uuid") == false);  // not exported by the old fake
}

TEST_CASE("a GPU mostly taken by other processes is a warning") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  s.set_env("FAKENVML_USED_BYTES", "64424509440");  // 60 of 80 GiB
  vt::doctor::Report r = s.run();
  const auto& gpu = one(r, "gpus.device");
  CHECK(gpu.verdict == Verdict::warning);
  CHECK(contains(gpu.advice, "75% of this GPU is in use"));
  check_processes(gpu);
}

TEST_CASE("without NVML, GPUs come from the driver with free memory from a primary context") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.set_env("FAKECUDA_DEVICES", "2");
  s.set_env("FAKECUDA_TOTAL_BYTES", "8G");
  s.set_env("FAKECUDA_FOREIGN_BYTES", "6G");
  vt::doctor::Report r = s.run();
  auto gpus = r.find("gpus.device");
  REQUIRE(gpus.size() == 2);
  for (int i = 0; i < 2; ++i) {
    const auto& g = *gpus[i];
    CHECK(g.data["index"] == i);
    CHECK(g.data["source"] == "cuda");
    CHECK(g.data["total_bytes"] == 8ull << 30);
    // The doctor's own primary context costs the device memory too (the simulated driver's
    // default FAKECUDA_CONTEXT_BYTES, 512 MiB), as on a real GPU.
    CHECK(g.data["free_bytes"] == (2ull << 30) - (512ull << 20));
    CHECK(g.data["used_bytes"] == (6ull << 30) + (512ull << 20));
    CHECK(g.data["processes"].is_null());
    CHECK(g.data["compute_capability"] == "9.0");
    CHECK(g.verdict == Verdict::warning);  // 75% used
  }
}

TEST_CASE("CUDA sees fewer GPUs than NVML (CUDA_VISIBLE_DEVICES)") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.use_nvml();
  s.set_env("FAKENVML_DEVICES", "2");
  vt::doctor::Report r = s.run();
  CHECK(r.find("gpus.device").size() == 2);
  const auto& v = one(r, "gpus.visible");
  CHECK(v.data["cuda"] == 1);
  CHECK(v.data["nvml"] == 2);
}
