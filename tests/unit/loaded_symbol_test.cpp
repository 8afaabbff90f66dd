// find_loaded_symbol (interpose/loaded_symbol.h): a definition in an object loaded RTLD_LOCAL,
// through its GNU hash table and through a SysV-only one, the object to skip, absent names, and
// load order.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "loaded_symbol.h"

namespace {
constexpr const char* kUsage = "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE";

void check_object(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h);
  void* want = dlsym(h, kUsage);
  REQUIRE(want);
  const char* where = nullptr;
  void* got = vt::find_loaded_symbol(kUsage, nullptr, &where);
  CHECK(got == want);
  CHECK(std::string(where) == path);
  // Skipping the object that defines it: nothing else does.
  CHECK(vt::find_loaded_symbol(kUsage, want, &where) == nullptr);
  CHECK(std::string(where).empty());
  // The counter next to it is found too; a name defined nowhere is not.
  CHECK(vt::find_loaded_symbol("fake_c10_usage_calls", nullptr, nullptr) == dlsym(h, "fake_c10_usage_calls"));
  CHECK(vt::find_loaded_symbol("no_such_symbol_anywhere_42", nullptr, nullptr) == nullptr);
  dlclose(h);
}
}  // namespace

TEST_CASE("find_loaded_symbol: a definition in an object loaded RTLD_LOCAL (GNU hash)", "[loaded_symbol]") {
  check_object(std::string(VT_FAKE_TORCH_DIR) + "/default/libc10.so");
}

TEST_CASE("find_loaded_symbol: an object with only a SysV hash table", "[loaded_symbol]") {
  check_object(std::string(VT_FAKE_TORCH_DIR) + "/sysv/libc10.so");
}

TEST_CASE("find_loaded_symbol: the first definition in load order (libc's malloc)", "[loaded_symbol]") {
  CHECK(vt::find_loaded_symbol("malloc", nullptr, nullptr) == dlsym(RTLD_DEFAULT, "malloc"));
}
