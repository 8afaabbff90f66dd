// The figures each OOM judge reasons from, computed once per failure (oom_verdict.cpp for the
// driver-level judge, torch_verdict.cpp for PyTorch's) and read by the verdict table's rules
// (verdicts.cpp). Letters as docs/metrics.md names them.
#pragma once

#include <cstdint>
#include <string>

#include "report_model.h"

namespace vt::analyzer {

// A failed driver allocation (docs/metrics.md, "OOM verdict").
struct DriverFacts {
  explicit DriverFacts(const OomReport& r) : o(r) {}
  const OomReport& o;
  double T = 1;              // device total (at least 1: shares divide by it)
  uint64_t R = 0, F = 0, P = 0;  // request, device free, this process's live device memory
  uint64_t cached = 0;       // this process's unused memory (pool free space, unmapped handles)
  uint64_t others = 0;       // held elsewhere (other processes, the driver)
  uint64_t growth = 0;       // of P, what grew steadily before the failure
  uint64_t G = 0;            // the driver's graph pool (in P)
  std::string named;         // NVML's other processes, "" when none
  bool blind = false;        // NVML cannot see this process
};

// A PyTorch OutOfMemoryError in PyTorch's terms (docs/metrics.md, "PyTorch").
struct TorchFacts {
  TorchFacts(const OomReport& r, const TorchOomInfo& i) : o(r), t(i) {}
  const OomReport& o;
  const TorchOomInfo& t;
  uint64_t T = 0, F = 0;  // device total and free, as PyTorch's message has them
  double Td = 1;          // T as a divisor
  uint64_t A = 0, R = 0, U = 0;  // allocated, reserved, reserved but unallocated
  uint64_t S = 0, X = 0;  // the block that did not fit, and what was tried (at least S)
  uint64_t L = 0, I = 0;  // the largest free block, inactive split
  uint64_t O = 0;         // this process's device memory outside PyTorch
  uint64_t others = 0;    // held by other processes (and the driver)
  uint64_t unsure = 0;    // of others, what may be this process's first context
  uint64_t growth = 0;    // of A, kept alive across iterations
  const TorchGrowth* top_growth = nullptr;  // the line that kept the most
  std::string named;      // NVML's other processes, "" when none
  bool blind = false;
  std::string top_holder;  // the user's line holding the most ("" when unknown)
};

}  // namespace vt::analyzer
