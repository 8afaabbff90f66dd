// See sandbox.h.
#include "sandbox.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

namespace doctor_test {

namespace {

// Everything the doctor reads from the environment that a developer's shell might set.
const char* const kHidden[] = {
    "CUDA_HOME",
    "CUDA_PATH",
    "VRAMTRACE_DOCTOR_LIBCUPTI",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_GPU_ALLOCATOR",
    "CUPY_GPU_MEMORY_LIMIT",
    "NCCL_BUFFSIZE",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "LD_PRELOAD",
    "CUDA_INJECTION64_PATH",
    "VRAMTRACE_DISABLE",
    "VRAMTRACE_SINK",
    "VRAMTRACE_OUTPUT",
    "FAKECUDA_DEVICES",
    "FAKECUDA_TOTAL_BYTES",
    "FAKECUDA_FOREIGN_BYTES",
    "FAKECUDA_DRIVER_VERSION",
    "FAKENVML_INIT_RESULT",
    "FAKENVML_DRIVER",
    "FAKENVML_CUDA_VERSION",
    "FAKENVML_DEVICES",
    "FAKENVML_TOTAL_BYTES",
    "FAKENVML_USED_BYTES",
    "FAKENVML_PROCESSES",
    "FAKENVML_GRAPHICS",
};

void make_parents(const std::string& path) {
  for (size_t i = 1; i < path.size(); ++i)
    if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

}  // namespace

Sandbox::Sandbox() {
  char tmpl[] = "/tmp/vt-doctor-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  root_ = tmpl;
  mkdir(site().c_str(), 0755);
  mkdir((root_ + "/tmp").c_str(), 0755);
  for (const char* name : kHidden) unset_env(name);
  set_env("VRAMTRACE_DOCTOR_ROOT", root_);
  // Paths that exist nowhere: no driver and no NVML until a test asks for them.
  set_env("VRAMTRACE_DOCTOR_LIBCUDA", root_ + "/nowhere/libcuda.so.1");
  set_env("VRAMTRACE_DOCTOR_LIBNVML", root_ + "/nowhere/libnvidia-ml.so.1");
  set_env("VRAMTRACE_LIBRARY", VT_LIBRARY);
  set_env("PYTHONPATH", site());
  set_env("TMPDIR", root_ + "/tmp");
  // -S: no site-packages of the real interpreter, only the sandbox's (PYTHONPATH).
  options.python = write("bin/python3", std::string("#!/bin/sh\nexec '") + VT_PYTHON + "' -S \"$@\"\n");
  chmod(options.python.c_str(), 0755);
}

Sandbox::~Sandbox() {
  for (const auto& [name, value] : saved_) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  std::string cmd = "rm -rf '" + root_ + "'";
  if (system(cmd.c_str()) != 0) WARN("could not remove " << root_);
}

void Sandbox::set_env(const std::string& name, const std::string& value) {
  if (!saved_.count(name)) {
    const char* old = getenv(name.c_str());
    saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
  }
  setenv(name.c_str(), value.c_str(), 1);
}

void Sandbox::unset_env(const std::string& name) {
  if (!saved_.count(name)) {
    const char* old = getenv(name.c_str());
    saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
  }
  unsetenv(name.c_str());
}

void Sandbox::use_fake_driver(int version) {
  set_env("VRAMTRACE_DOCTOR_LIBCUDA", VT_FAKECUDA);
  set_env("FAKECUDA_DRIVER_VERSION", std::to_string(version));
  // Standing for a real GPU's driver (the version logic under test); the simulated name would have
  // the doctor say it is the simulator (tests/e2e/cli_conventions_test.cpp checks that).
  set_env("FAKECUDA_DEVICE_NAME", "NVIDIA H200");
}

void Sandbox::use_nvml(bool old_api) {
  set_env("VRAMTRACE_DOCTOR_LIBNVML", fake(old_api ? "nvml_old/libnvidia-ml.so.1" : "nvml/libnvidia-ml.so.1"));
}

std::string Sandbox::write(const std::string& rel, const std::string& content) {
  std::string path = root_ + "/" + rel;
  make_parents(path);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string Sandbox::copy(const std::string& rel, const std::string& from) {
  std::ifstream in(from, std::ios::binary);
  REQUIRE(in.good());
  std::string path = root_ + "/" + rel;
  make_parents(path);
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  chmod(path.c_str(), 0755);
  return path;
}

void Sandbox::symlink(const std::string& target_rel, const std::string& link_rel) {
  std::string link = root_ + "/" + link_rel;
  make_parents(link);
  REQUIRE(::symlink((root_ + "/" + target_rel).c_str(), link.c_str()) == 0);
}

std::string Sandbox::fake(const std::string& dir_and_name) { return std::string(VT_FAKES) + "/" + dir_and_name; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const vt::doctor::Check& one(const vt::doctor::Report& r, const std::string& id) {
  auto found = r.find(id);
  INFO(vt::doctor::render_text(r));
  REQUIRE(found.size() == 1);
  return *found[0];
}

const vt::doctor::Check& with(const vt::doctor::Report& r, const std::string& id, const std::string& needle) {
  for (const vt::doctor::Check* c : r.find(id))
    if (contains(c->message, needle)) return *c;
  INFO(vt::doctor::render_text(r));
  FAIL("no " << id << " check mentions '" << needle << "'");
  throw std::logic_error("unreachable");
}

}  // namespace doctor_test
