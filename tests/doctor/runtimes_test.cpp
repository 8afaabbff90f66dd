// Toolkits, the Python probe, and the runtimes (libcudart) measured against the driver.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "sandbox.h"

using namespace doctor_test;
using vt::doctor::Verdict;

namespace {

// torch as pip installs it: a package directory with version.py and a dist-info, plus (when
// `bundled`) its own hashed copy of the runtime. Its __init__ raises: the probe must not import it.
void install_torch(Sandbox& s, const std::string& cuda, bool bundled) {
  s.write("site-packages/torch/__init__.py", "raise RuntimeError('the doctor imported torch')\n");
  s.write("site-packages/torch/version.py", "__version__ = '2.4.0'\ncuda: Optional[str] = '" + cuda + "'\n");
  s.write("site-packages/torch-2.4.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\n");
  if (bundled) s.copy("site-packages/torch/lib/libcudart-9c3f1a2b.so.12", Sandbox::fake("cudart124/libcudart.so.12"));
}

}  // namespace

TEST_CASE("toolkits: CUDA_HOME first, versions from version.json, nvcc or cuda.h, symlinks merged") {
  Sandbox s;
  s.write("usr/local/cuda-12.4/version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}})");
  s.copy("usr/local/cuda-12.4/lib64/libcudart.so.12", Sandbox::fake("cudart124/libcudart.so.12"));
  s.symlink("usr/local/cuda-12.4", "usr/local/cuda");
  s.write("usr/local/cuda-13.0/include/cuda.h", "#pragma once\n#define CUDA_VERSION 13000\n");
  s.write("opt/cuda-11/bin/nvcc", "#!/bin/sh\necho 'Cuda compilation tools, release 11.8, V11.8.89'\n");
  chmod((s.root() + "/opt/cuda-11/bin/nvcc").c_str(), 0755);
  s.set_env("CUDA_HOME", s.root() + "/opt/cuda-11");
  vt::doctor::Report r = s.run();

  auto tk = r.find("toolkit.install");
  REQUIRE(tk.size() == 3);  // cuda -> cuda-12.4 counted once
  CHECK(tk[0]->data["found_by"] == "CUDA_HOME");
  CHECK(tk[0]->data["active"] == true);
  CHECK(tk[0]->data["version"] == 11080);
  CHECK(tk[0]->data["version_source"] == "nvcc --version");
  CHECK(tk[1]->data["path"] == s.root() + "/usr/local/cuda");
  CHECK(tk[1]->data["version"] == 12040);
  CHECK(tk[1]->data["version_source"] == "version.json");
  CHECK(tk[1]->verdict == Verdict::info);  // not the active one
  CHECK(tk[2]->data["version"] == 13000);
  CHECK(tk[2]->data["version_source"] == "cuda.h");
  // The 12.4 toolkit's runtime joins the runtime list.
  const auto& rt = one(r, "runtimes.cudart");
  CHECK(rt.data["version"] == 12040);
  CHECK(contains(rt.data["owners"][0].get<std::string>(), "toolkit"));
}

TEST_CASE("toolkits: a CUDA_HOME that is not a directory, and no toolkit at all") {
  Sandbox s;
  s.set_env("CUDA_HOME", s.root() + "/missing");
  vt::doctor::Report r = s.run();
  const auto& env = one(r, "toolkit.env");
  CHECK(env.verdict == Verdict::warning);
  CHECK(contains(env.message, "CUDA_HOME=" + s.root() + "/missing is not a directory"));
  CHECK(contains(one(r, "toolkit.install").message, "no CUDA toolkit found"));
}

TEST_CASE("the driver is too old for a runtime: a problem, exit 1") {
  Sandbox s;
  s.use_fake_driver(12020);
  s.copy("site-packages/nvidia/cu13/lib/libcudart.so.13", Sandbox::fake("cudart130/libcudart.so.13"));
  vt::doctor::Report r = s.run();
  const auto& rt = one(r, "runtimes.cudart");
  CHECK(rt.verdict == Verdict::problem);
  CHECK(rt.data["version"] == 13000);
  CHECK(rt.data["version_source"] == "cudaRuntimeGetVersion");
  CHECK(rt.data["owners"] == nlohmann::json{"nvidia/cu13"});
  CHECK(rt.data["driver_supports"] == false);
  CHECK(contains(rt.message, "too old"));
  CHECK(contains(rt.advice, "R580"));
  CHECK(r.exit_code() == 1);
}

TEST_CASE("a runtime one minor version ahead of the driver: a warning, not a problem") {
  Sandbox s;
  s.use_fake_driver(12020);
  install_torch(s, "12.4", /*bundled=*/true);
  vt::doctor::Report r = s.run();
  const auto& rt = one(r, "runtimes.cudart");
  CHECK(rt.verdict == Verdict::warning);
  CHECK(rt.data["owners"] == nlohmann::json{"torch"});
  CHECK(rt.data["driver_supports"] == true);
  CHECK(contains(rt.message, "minor-version compatibility"));
  CHECK(r.exit_code() == 0);
}

TEST_CASE("frameworks are found without importing them") {
  Sandbox s;
  install_torch(s, "12.4", /*bundled=*/false);
  s.write("site-packages/cupy/__init__.py", "raise RuntimeError('imported cupy')\n");
  s.write("site-packages/cupy_cuda13x-13.6.0.dist-info/METADATA", "Name: cupy-cuda13x\nVersion: 13.6.0\n");
  vt::doctor::Report r = s.run();
  const auto& py = one(r, "python.interpreter");
  CHECK(py.verdict == Verdict::ok);
  CHECK(py.data["answered"] == true);
  const auto& torch = with(r, "python.framework", "torch");
  CHECK(contains(torch.message, "torch 2.4.0 (built for CUDA 12.4)"));
  CHECK(torch.data["cuda"] == "12.4");
  const auto& cupy = with(r, "python.framework", "cupy");
  CHECK(cupy.data["distribution"] == "cupy-cuda13x");
  CHECK(cupy.data["version"] == "13.6.0");
}

TEST_CASE("runtimes of different CUDA majors in one environment") {
  Sandbox s;
  s.use_fake_driver(13000);
  install_torch(s, "12.4", /*bundled=*/true);
  s.copy("site-packages/nvidia/cu13/lib/libcudart.so.13", Sandbox::fake("cudart130/libcudart.so.13"));
  vt::doctor::Report r = s.run();
  auto rts = r.find("runtimes.cudart");
  REQUIRE(rts.size() == 2);
  for (const auto* rt : rts) CHECK(rt->verdict == Verdict::ok);  // the driver runs both
  const auto& mix = one(r, "runtimes.mismatch");
  CHECK(mix.verdict == Verdict::warning);
  CHECK(mix.data["majors"]["12"] == nlohmann::json{"12.4: torch"});
  CHECK(mix.data["majors"]["13"] == nlohmann::json{"13.0: nvidia/cu13"});
  CHECK(contains(mix.message, "12 and 13"));
}

TEST_CASE("a runtime that cannot be loaded is versioned by its file name") {
  Sandbox s;
  s.use_fake_driver(13000);
  s.write("site-packages/nvidia/cuda_runtime/lib/libcudart.so.11.0", "not a library\n");
  vt::doctor::Report r = s.run();
  const auto& rt = one(r, "runtimes.cudart");
  CHECK(rt.data["version"] == 11000);
  CHECK(rt.data["version_source"] == "file name");
  CHECK(contains(rt.message, "CUDA 11.x runtime"));
  REQUIRE(rt.details.size() == 1);
  CHECK(contains(rt.details[0], "could not load it"));
  CHECK(rt.verdict == Verdict::ok);  // an older runtime runs on a newer driver
}

TEST_CASE("the --python option: a missing interpreter named explicitly is a problem, a non-Python one a warning") {
  Sandbox s;
  s.options.python = s.root() + "/no/python";
  vt::doctor::Report r = s.run();
  CHECK(one(r, "python.interpreter").verdict == Verdict::problem);

  s.options.python = VT_PLAIN_DYNAMIC;  // runs, exits 1, prints no JSON
  r = s.run();
  const auto& py = one(r, "python.interpreter");
  CHECK(py.verdict == Verdict::warning);
  CHECK(contains(py.message, "did not answer the probe (exit status 1)"));
}
