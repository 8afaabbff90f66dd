// find_loaded_symbol (interpose/entry/loaded_symbol.h): a definition in an object loaded RTLD_LOCAL,
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

TEST_CASE("find_loaded_symbol: of a name with an old hidden version, the default one, as dlsym", "[loaded_symbol]") {
  // glibc (x86-64) keeps NAME@GLIBC_2.2.5 of these for old binaries, at other addresses than
  // their default versions; in Debian 12's libc.so.6 the hidden one of the last three comes first
  // in the symbol table (an aarch64 glibc has no such versions: the test then holds trivially).
  for (const char* name : {"pthread_cond_wait", "realpath", "sched_setaffinity", "pthread_cond_timedwait", "timer_delete"}) {
    INFO(name);
    void* want = dlsym(RTLD_DEFAULT, name);
    REQUIRE(want);
    CHECK(vt::find_loaded_symbol(name, nullptr, nullptr) == want);
    CHECK(vt::first_definition(name, nullptr) == want);
  }
}

TEST_CASE("find_loaded_object: the object dlopen(RTLD_NOLOAD) names, by soname or file name", "[loaded_symbol]") {
  uintptr_t base = 0;
  const void* dynamic = nullptr;
  REQUIRE(vt::find_loaded_object("libc.so.6", &base, &dynamic));
  // (libc's own definition: under ASan, RTLD_DEFAULT finds the sanitizer's interceptor first)
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(libc);
  CHECK(vt::symbol_in_object(base, dynamic, "realpath") == dlsym(libc, "realpath"));
  dlclose(libc);
  // An IFUNC (glibc's strlen picks its implementation by CPU): no address, said so.
  bool indirect = false;
  CHECK(vt::symbol_in_object(base, dynamic, "strlen", &indirect) == nullptr);
  CHECK(indirect);
  CHECK(vt::symbol_in_object(base, dynamic, "realpath", &indirect) != nullptr);
  CHECK_FALSE(indirect);
  CHECK_FALSE(vt::find_loaded_object("libvt-never-loaded.so.7", &base, &dynamic));
  // Loaded RTLD_LOCAL from a path whose file name is not its soname: found by the file name.
  std::string path = std::string(VT_FAKE_TORCH_DIR) + "/sysv/libc10.so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(h);
  REQUIRE(vt::find_loaded_object("libc10.so", &base, &dynamic));
  CHECK(vt::symbol_in_object(base, dynamic, kUsage) == dlsym(h, kUsage));
  dlclose(h);
}
