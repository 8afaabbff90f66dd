// Writes a trace with N modules and N allocations, each from its own one-frame stack inside its
// own module: the worst case for finding modules by address (a linear scan per distinct address
// is N^2). Modules alternate between two placements recorded at different times, so half of the
// ranges are re-mapped by later records (the lookup must still pick the latest). Module paths
// name no file: only the lookup is measured, not ELF parsing.
//
// Usage: gen_modules_trace OUT_PATH [N]      (default 80000)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "crafted_trace.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gen_modules_trace OUT_PATH [N]\n");
    return 2;
  }
  long n = argc > 2 ? strtol(argv[2], nullptr, 10) : 80000;
  if (n < 1 || n > 10000000) {
    fprintf(stderr, "gen_modules_trace: N must be 1..10000000\n");
    return 2;
  }
  const uint64_t kBase = 0x7f0000000000ull, kSpan = 0x10000;
  crafted::CraftedTrace t;
  t.process({"gen_modules_trace"}, "/nonexistent/gen_modules_trace");
  t.device(0, 80ull << 30, "bench GPU");
  for (long i = 0; i < n; ++i) {
    uint64_t lo = kBase + uint64_t(i) * kSpan;
    t.module(lo, lo, lo + kSpan, "/nonexistent/lib" + std::to_string(i) + ".so");
  }
  // Every other range loaded again later by another library: the later record must win.
  for (long i = 0; i < n; i += 2) {
    uint64_t lo = kBase + uint64_t(i) * kSpan;
    t.module(lo, lo, lo + kSpan, "/nonexistent/reloaded" + std::to_string(i) + ".so");
  }
  for (long i = 0; i < n; ++i) t.stack(uint32_t(i + 1), {kBase + uint64_t(i) * kSpan + 0x100});
  for (long i = 0; i < n; ++i) t.alloc(0x100000000ull + uint64_t(i) * 4096, 4096, uint32_t(i + 1));
  t.write(argv[1]);
  printf("gen_modules_trace: %ld modules (%ld re-mapped), %ld stacks, %ld events, %zu chunks in %s\n", n, (n + 1) / 2, n,
         n, t.chunks(), argv[1]);
  return 0;
}
