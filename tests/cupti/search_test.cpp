// Where libcupti is looked for, and how another tool is noticed from the environment (the dlsym
// swaps of the exported wrappers: wrapper_test.cpp).
#include <catch2/catch.hpp>

#include <cupti.h>

#include <string>
#include <vector>

#include "library_search.h"
#include "other_tools.h"

using namespace vt::cupti;

namespace {
std::vector<std::string> candidates(const SearchInputs& in) {
  static Candidates c;
  cupti_candidates(in, &c);
  return std::vector<std::string>(c.path, c.path + c.n);
}
size_t pos(const std::vector<std::string>& v, const std::string& s) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == s) return i;
  return SIZE_MAX;
}
}  // namespace

TEST_CASE("VRAMTRACE_CUPTI_LIBRARY is the only candidate when set") {
  SearchInputs in;
  in.cupti_library = "/opt/x/libcupti.so.13";
  const char* loaded[] = {"/usr/lib/libcudart.so.13"};
  in.loaded = loaded;
  in.n_loaded = 1;
  static Candidates c;
  cupti_candidates(in, &c);
  CHECK(c.exclusive);
  REQUIRE(c.n == 1);
  CHECK(std::string(c.path[0]) == "/opt/x/libcupti.so.13");
}

TEST_CASE("a loaded libcupti first, then beside libcudart (pip and torch layouts), then the toolkit") {
  const char* loaded[] = {
      "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12",
      "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12",
      "/venv/lib/python3.12/site-packages/torch.libs/libcupti-1a2b3c4d.so.12",  // auditwheel's renaming
      "/venv/lib/python3.12/site-packages/torch/lib/libcuptiwrapper.so",         // not CUPTI
  };
  SearchInputs in;
  in.loaded = loaded;
  in.n_loaded = 3;
  in.cuda_home = "/opt/cuda-12.8";
  auto v = candidates(in);
  REQUIRE(!v.empty());
  CHECK(v[0] == "/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  CHECK(v[1] == "/venv/lib/python3.12/site-packages/torch.libs/libcupti-1a2b3c4d.so.12");
  CHECK(pos(v, "/venv/lib/python3.12/site-packages/torch/lib/libcuptiwrapper.so") == SIZE_MAX);
  size_t beside = pos(v, "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcupti.so.12");
  size_t pip = pos(v, "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/../../cuda_cupti/lib/libcupti.so.12");
  size_t home = pos(v, "/opt/cuda-12.8/extras/CUPTI/lib64/libcupti.so.12");
  size_t usr = pos(v, "/usr/local/cuda/lib64/libcupti.so.12");
  size_t bare = pos(v, "libcupti.so.12");
  CHECK(beside < pip);
  CHECK(pip < home);
  CHECK(home < usr);
  CHECK(usr < bare);
  CHECK(bare == v.size() - 2);
  CHECK(v.back() == "libcupti.so");
  CHECK(pos(v, "libcupti.so.13") == SIZE_MAX);  // the runtime's major, not ours
}

TEST_CASE("toolkit layouts: lib64 and targets/<arch>/lib lead to extras/CUPTI") {
  const char* loaded[] = {"/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.48"};
  SearchInputs in;
  in.loaded = loaded;
  in.n_loaded = 1;
  auto v = candidates(in);
  CHECK(v[0] == "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so.13");
  CHECK(pos(v, "/usr/local/cuda-13.0/targets/x86_64-linux/lib/../../../extras/CUPTI/lib64/libcupti.so.13") != SIZE_MAX);
}

TEST_CASE("without a libcudart the driver's major, else ours, picks the versioned name") {
  SearchInputs in;
  in.driver_major = 12;
  auto v = candidates(in);
  CHECK(pos(v, "libcupti.so.12") != SIZE_MAX);
  SearchInputs none;
  auto w = candidates(none);
  CHECK(pos(w, "libcupti.so." + std::to_string(CUPTI_API_VERSION / 10000)) != SIZE_MAX);
  CHECK(soname_major("/a/libcudart.so.13.0.48") == 13);
  CHECK(soname_major("libcupti.so.12") == 12);
  CHECK(soname_major("libcupti.so") == 0);
}

TEST_CASE("another tool is recognised from its environment variables") {
  char var[64];
  const char* none[] = {"PATH=/usr/bin", "CUDA_INJECTION64_PATH=", "HOME=/root", nullptr};
  CHECK_FALSE(other_tool_in_env(none, var, sizeof var));  // set but empty counts as unset
  const char* inj[] = {"PATH=/usr/bin", "CUDA_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so", nullptr};
  REQUIRE(other_tool_in_env(inj, var, sizeof var));
  CHECK(std::string(var) == "CUDA_INJECTION64_PATH");
  const char* nsys[] = {"NSYS_PROFILING_SESSION_ID=3", nullptr};
  REQUIRE(other_tool_in_env(nsys, var, sizeof var));
  CHECK(std::string(var) == "NSYS_PROFILING_SESSION_ID");
  const char* ours[] = {"NVTX_INJECTION64_PATH=/opt/vt/lib/libvramtrace.so", nullptr};
  CHECK_FALSE(other_tool_in_env(ours, var, sizeof var));  // set by vramtrace run
  const char* nsys_nvtx[] = {"NVTX_INJECTION64_PATH=/opt/nsight/libToolsInjection64.so", nullptr};
  CHECK(other_tool_in_env(nsys_nvtx, var, sizeof var));
}
