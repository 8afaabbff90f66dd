// Environment variables that change GPU memory behaviour: each explainer, and the report lines.
#include <catch2/catch.hpp>

#include "checks/env.h"
#include "sandbox.h"

using namespace doctor_test;
using vt::doctor::Verdict;

TEST_CASE("PYTORCH_CUDA_ALLOC_CONF: every option explained, brackets respected") {
  auto e = vt::doctor::explain_pytorch_alloc_conf(
      "expandable_segments:True, garbage_collection_threshold:0.8,max_split_size_mb:512,"
      "roundup_power2_divisions:[256:1,512:2,>:4]");
  CHECK(e.verdict == Verdict::info);
  REQUIRE(e.details.size() == 4);
  CHECK(contains(e.details[0], "cuMemCreate/cuMemMap"));
  CHECK(contains(e.details[1], "80%"));
  CHECK(contains(e.details[2], "larger than 512 MiB are never split"));
  CHECK(contains(e.details[3], "[256:1,512:2,>:4]"));
  CHECK(e.data["options"]["max_split_size_mb"] == "512");
}

TEST_CASE("PYTORCH_CUDA_ALLOC_CONF: typos, bad values and options the async backend ignores") {
  auto typo = vt::doctor::explain_pytorch_alloc_conf("expandable_segment:True");
  CHECK(typo.verdict == Verdict::warning);
  CHECK(contains(typo.details.at(0), "not valid: unknown option 'expandable_segment'"));

  auto small = vt::doctor::explain_pytorch_alloc_conf("max_split_size_mb:10");
  CHECK(small.verdict == Verdict::warning);
  CHECK(contains(small.details.at(0), "above 20"));

  auto gc = vt::doctor::explain_pytorch_alloc_conf("garbage_collection_threshold:1.5");
  CHECK(gc.verdict == Verdict::warning);

  auto mixed = vt::doctor::explain_pytorch_alloc_conf("backend:cudaMallocAsync,expandable_segments:True");
  CHECK(mixed.verdict == Verdict::warning);
  CHECK(contains(mixed.advice, "no effect"));

  auto async = vt::doctor::explain_pytorch_alloc_conf("backend:cudaMallocAsync");
  CHECK(async.verdict == Verdict::info);
  CHECK(contains(async.details.at(0), "stream-ordered pool"));
}

TEST_CASE("framework and CUDA variables: meanings and bad values") {
  using namespace vt::doctor;
  CHECK(explain_pytorch_no_caching("1").verdict == Verdict::warning);
  CHECK(explain_pytorch_no_caching("0").verdict == Verdict::info);
  CHECK(contains(explain_xla_preallocate("false").meaning, "instead of reserving 75%"));
  CHECK(explain_xla_preallocate("maybe").verdict == Verdict::warning);
  CHECK(contains(explain_xla_mem_fraction(".5").meaning, "50%"));
  CHECK(explain_xla_mem_fraction("1.5").verdict == Verdict::warning);
  CHECK(contains(explain_xla_allocator("platform").meaning, "exactly"));
  CHECK(explain_xla_allocator("magic").verdict == Verdict::warning);
  CHECK(contains(explain_tf_allow_growth("true").meaning, "grows its GPU pool"));
  CHECK(explain_tf_allow_growth("yes").verdict == Verdict::warning);
  CHECK(contains(explain_cupy_limit("50%").meaning, "50%"));
  CHECK(explain_cupy_limit("1G").data["bytes"] == 1ull << 30);
  CHECK(explain_cupy_limit("lots").verdict == Verdict::warning);
  CHECK(contains(explain_nccl_buffsize("16777216").meaning, "16.0 MiB"));
  CHECK(explain_nccl_buffsize("-1").verdict == Verdict::warning);
  uint64_t b = 0;
  CHECK((parse_env_bytes("4M", &b) && b == 4u << 20));
  CHECK_FALSE(parse_env_bytes("4X", &b));
}

TEST_CASE("variables in the report: one line each with its meaning") {
  Sandbox s;
  s.set_env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
  s.set_env("CUDA_VISIBLE_DEVICES", "");
  s.set_env("CUDA_MODULE_LOADING", "EAGER");
  s.set_env("CUDA_DEVICE_MAX_CONNECTIONS", "1");
  s.set_env("LD_PRELOAD", "/usr/lib/libfancyhook.so");
  s.set_env("CUDA_INJECTION64_PATH", "/opt/nsight/libinject.so");
  s.set_env("VRAMTRACE_DISABLE", "1");
  vt::doctor::Report r = s.run();
  CHECK(r.find("environment.none").empty());
  auto vars = r.find("environment.variable");
  CHECK(vars.size() == 7);

  const auto& alloc = with(r, "environment.variable", "PYTORCH_CUDA_ALLOC_CONF=");
  CHECK(alloc.verdict == Verdict::info);
  CHECK(alloc.details.size() == 1);
  CHECK(alloc.data["parsed"]["options"]["expandable_segments"] == "True");

  const auto& vis = with(r, "environment.variable", "CUDA_VISIBLE_DEVICES=");
  CHECK(vis.verdict == Verdict::warning);
  CHECK(contains(vis.message, "hides every GPU"));

  CHECK(contains(with(r, "environment.variable", "CUDA_MODULE_LOADING=").message, "more per context"));
  CHECK(contains(with(r, "environment.variable", "CUDA_DEVICE_MAX_CONNECTIONS=").message, "1 serialises"));

  const auto& pre = with(r, "environment.variable", "LD_PRELOAD=");
  CHECK(pre.verdict == Verdict::warning);
  CHECK(pre.data["parsed"]["others"] == nlohmann::json{"/usr/lib/libfancyhook.so"});
  CHECK(pre.data["parsed"]["missing"] == nlohmann::json{"/usr/lib/libfancyhook.so"});

  CHECK(with(r, "environment.variable", "CUDA_INJECTION64_PATH=").verdict == Verdict::warning);
  CHECK(with(r, "environment.variable", "VRAMTRACE_DISABLE=").verdict == Verdict::warning);
}

TEST_CASE("CUDA_VISIBLE_DEVICES: UUIDs, and entries CUDA stops at") {
  Sandbox s;
  s.set_env("CUDA_VISIBLE_DEVICES", "GPU-1234,1,bogus,2");
  vt::doctor::Report r = s.run();
  const auto& v = one(r, "environment.variable");
  CHECK(v.verdict == Verdict::warning);
  CHECK(v.data["parsed"]["visible"] == nlohmann::json{"GPU-1234", "1"});
  CHECK(contains(v.advice, "'bogus'"));
}

TEST_CASE("the two PyTorch variables disagreeing is a warning") {
  Sandbox s;
  s.set_env("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
  s.set_env("PYTORCH_ALLOC_CONF", "expandable_segments:False");
  vt::doctor::Report r = s.run();
  CHECK(one(r, "environment.conflict").verdict == Verdict::warning);
}
