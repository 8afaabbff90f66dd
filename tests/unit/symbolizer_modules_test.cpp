// Finding the module of an address: the latest record covering it wins (a library unloaded and
// another mapped over its range, records arriving in any order), checked against the plain
// definition on random overlapping ranges; and module files that are not regular files.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "symbolizer.h"

using vt::analyzer::ModuleInfo;
using vt::analyzer::StackStore;
using vt::analyzer::Symbolizer;

namespace {

// The definition: of the records covering `a`, the one with the highest t_ns, then the later one.
std::string expected_module(const StackStore& s, uint64_t a) {
  int best = -1;
  for (size_t i = 0; i < s.modules.size(); ++i) {
    const ModuleInfo& m = s.modules[i];
    if (a >= m.lo && a < m.hi && (best < 0 || m.t_ns >= s.modules[size_t(best)].t_ns)) best = int(i);
  }
  return best < 0 ? "??" : s.modules[size_t(best)].path;
}

ModuleInfo mod(uint64_t lo, uint64_t hi, uint64_t t, const std::string& path) {
  ModuleInfo m;
  m.bias = lo;
  m.lo = lo;
  m.hi = hi;
  m.t_ns = t;
  m.path = path;
  return m;
}

}  // namespace

TEST_CASE("module lookup: the latest record covering an address, on random overlapping ranges") {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 40; ++round) {
    StackStore store;
    int n = 1 + int(rng() % 60);
    for (int i = 0; i < n; ++i) {
      uint64_t lo = 0x1000 * (rng() % 64), len = 0x1000 * (rng() % 16);  // some empty, many overlapping
      if (rng() % 8 == 0) std::swap(lo, len);                              // and a few inverted
      store.modules.push_back(mod(lo, lo + len, rng() % 5, "/m" + std::to_string(i)));
    }
    Symbolizer sym(store);
    for (uint64_t a = 0; a < 0x1000 * 82; a += 0x200) {
      std::vector<vt::analyzer::Frame> f = sym.native(a + 1);  // +1: the lookup is of the call, a return address - 1
      REQUIRE(f.size() == 1);
      INFO("round " << round << " address 0x" << std::hex << a);
      CHECK(f[0].module == expected_module(store, a));
    }
  }
}

TEST_CASE("module lookup: a range mapped again later, equal times, adjacent ranges and growing stores") {
  StackStore store;
  store.modules.push_back(mod(0x10000, 0x20000, 5, "/old"));
  store.modules.push_back(mod(0x10000, 0x20000, 9, "/new"));     // re-mapped later: wins
  store.modules.push_back(mod(0x18000, 0x19000, 1, "/earlier"));  // recorded earlier: loses
  store.modules.push_back(mod(0x20000, 0x30000, 3, "/next"));     // adjacent
  store.modules.push_back(mod(0x30000, 0x40000, 3, "/a"));
  store.modules.push_back(mod(0x30000, 0x40000, 3, "/b"));  // same time: the later record
  Symbolizer sym(store);
  CHECK(sym.native(0x10001)[0].module == "/new");
  CHECK(sym.native(0x18001)[0].module == "/new");
  CHECK(sym.native(0x1ffff + 1)[0].module == "/new");
  CHECK(sym.native(0x20001)[0].module == "/next");
  CHECK(sym.native(0x30001)[0].module == "/b");
  CHECK(sym.native(0x40001)[0].module == "??");
  CHECK(sym.native(0x1)[0].module == "??");
  // A module that arrives after the first lookup (top reloads a growing trace) is found too.
  store.modules.push_back(mod(0x50000, 0x60000, 20, "/late"));
  CHECK(sym.native(0x50001)[0].module == "/late");
}

TEST_CASE("a module path naming a FIFO or a device keeps module+offset and is not opened for reading") {
  char tmpl[] = "/tmp/vt-unit-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string pipe = dir + "/libfifo.so";
  REQUIRE(mkfifo(pipe.c_str(), 0600) == 0);
  StackStore store;
  store.modules.push_back(mod(0x10000, 0x20000, 1, pipe));
  store.modules.push_back(mod(0x20000, 0x30000, 1, "/dev/zero"));
  Symbolizer sym(store);
  auto f = sym.native(0x10100);  // a blocking open of the FIFO would never return
  CHECK(f[0].module == pipe);
  CHECK(f[0].function == "??");
  CHECK(f[0].offset == 0x100);
  CHECK(sym.native(0x20100)[0].module == "/dev/zero");
  unlink(pipe.c_str());
  rmdir(dir.c_str());
}

// C functions whose names are also manglings of a builtin type (v, w, f, i...): __cxa_demangle
// turns "f" into "float"; only _Z names are mangled (issue 38: `w` was shown as wchar_t).
extern "C" __attribute__((noinline, used)) int w(int x) { return x + 1; }
extern "C" __attribute__((noinline, used)) int f(int x) { return x * 3; }
extern "C" __attribute__((noinline, used)) int i(int x) { return x - 5; }

TEST_CASE("a C function named like a builtin type (w or f or i) keeps its name") {
  for (auto [fn, name] : {std::pair<int (*)(int), std::string>{&w, "w"}, {&f, "f"}, {&i, "i"}}) {
    Dl_info info;
    REQUIRE(dladdr(reinterpret_cast<void*>(fn), &info));
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    REQUIRE(n > 0);
    exe[n] = '\0';
    StackStore store;
    uint64_t base = reinterpret_cast<uint64_t>(info.dli_fbase);
    store.modules.push_back(mod(base, base + (64ull << 20), 1, exe));
    Symbolizer sym(store);
    std::vector<vt::analyzer::Frame> frames = sym.native(reinterpret_cast<uint64_t>(fn) + 2);
    REQUIRE(!frames.empty());
    CHECK(frames.back().function == name);  // (not "wchar_t", "float", "int")
  }
}
