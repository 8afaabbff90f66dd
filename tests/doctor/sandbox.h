// A fake machine for one test: a temporary root (VRAMTRACE_DOCTOR_ROOT) where the test puts
// toolkits, site-packages and library files, and an environment that hides the real machine
// (driver, NVML, CUDA_HOME, memory-related variables) until the test opts in. The destructor
// restores the environment and removes the root.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor.h"

namespace doctor_test {

class Sandbox {
 public:
  Sandbox();
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const std::string& root() const { return root_; }
  std::string site() const { return root_ + "/site-packages"; }  // on PYTHONPATH

  void set_env(const std::string& name, const std::string& value);
  void unset_env(const std::string& name);

  // The simulated driver (tests/fakecuda) as libcuda, reporting `version`.
  void use_fake_driver(int version = 13000);
  // The fake NVML (current API, or only the pre-R470 names).
  void use_nvml(bool old_api = false);

  // Files under the root; parents are created. Return the absolute path.
  std::string write(const std::string& rel, const std::string& content);
  std::string copy(const std::string& rel, const std::string& from);
  void symlink(const std::string& target_rel, const std::string& link_rel);
  // A file built in tests/doctor/fakes: "cudart124/libcudart.so.12".
  static std::string fake(const std::string& dir_and_name);

  vt::doctor::Options options;  // python: a wrapper running the real interpreter with -S
  vt::doctor::Report run() const { return vt::doctor::examine(options); }

 private:
  std::string root_;
  std::map<std::string, std::optional<std::string>> saved_;  // original values
};

// The single check with this id (the test fails if there is not exactly one).
const vt::doctor::Check& one(const vt::doctor::Report& r, const std::string& id);
// The check with this id whose message contains `needle`.
const vt::doctor::Check& with(const vt::doctor::Report& r, const std::string& id, const std::string& needle);
bool contains(const std::string& haystack, const std::string& needle);

}  // namespace doctor_test
