// The real cudart, static and shared, is handed vramtrace's hook for every hooked driver function
// it looks up (checked from VRAMTRACE_DEBUG_LOOKUPS, which logs what each lookup finally returned).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <set>
#include <sys/stat.h>

#include "harness.h"

namespace {

struct Lookup {
  std::string name, module, symbol;
  int flags = 0, result = 0;
};

std::vector<Lookup> lookups_of(const std::string& program) {
  std::string dir = e2e::temp_dir();
  std::string log = dir + "/lookups.log";
  e2e::Result r = e2e::run({{program}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_DEBUG_LOOKUPS", log}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(log);
  std::vector<Lookup> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    Lookup l;
    std::string version, arrow;
    in >> l.name >> version >> l.flags >> l.result >> arrow >> l.module >> l.symbol;
    out.push_back(l);
  }
  return out;
}

}  // namespace

TEST_CASE("the real cudart receives vramtrace's hooks through cuGetProcAddress") {
  struct stat st;
  for (std::string name : {"cudart_probe_static", "cudart_probe_shared"}) {
    std::string program = e2e::program(name);
    if (stat(program.c_str(), &st) != 0) FAIL("missing " << program << ": the CUDA toolkit's cudart was not found at build time");
    INFO(name);
    std::vector<Lookup> lookups = lookups_of(program);
    CHECK(lookups.size() > 400);  // cudart's whole table
    std::set<std::string> hooked, leaked;
    for (const Lookup& l : lookups) {
      if (l.module == "libvramtrace.so") hooked.insert(l.symbol);
      // A driver function we hook must never reach cudart unwrapped.
      for (const auto& op : vt::kOps)
        if (l.module != "libvramtrace.so" && l.symbol == op.name) leaked.insert(l.symbol);
    }
    CHECK(leaked.empty());
    for (std::string expected :
         {"cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged",
          "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister", "cuMemAllocAsync",
          "cuMemAllocAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz",
          "cuMemPoolCreate", "cuMemPoolDestroy", "cuMemPoolTrimTo", "cuArrayCreate_v2", "cuArray3DCreate_v2",
          "cuArrayDestroy", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle", "cuDevicePrimaryCtxReset",
          "cuDevicePrimaryCtxRelease"})
      CHECK(hooked.count(expected) == 1);
  }
}
