// The synthetic workload of bench/gen_trace.cpp: a few threads of training-like steps, each event
// recorded with vt::record from its own call site, so the trace holds a handful of distinct stacks
// (the recorder starts a stack at the return address of record()'s caller).
#pragma once

#include <cstdint>

struct GenThread {
  int index;              // 0..threads-1: picks the role and the address region
  uint64_t budget;        // events to emit (exactly)
  uint64_t emitted;       // out
  uint64_t leaked_bytes;  // out: bytes allocated and never freed (the slow leak)
  uint64_t failed;        // out: failed allocations emitted
};

// Runs one thread's share of the workload: a training-like loop of steps.
void gen_run_thread(GenThread* t);
