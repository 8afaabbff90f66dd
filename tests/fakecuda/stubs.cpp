// stubs.cpp — every driver entry point of the toolkit's headers, exported under the real
// driver's name with the signature of its PFN typedef, as a weak definition that answers
// CUDA_ERROR_NOT_SUPPORTED. The api_*.cpp files define the entry points the simulator
// models; their (strong) definitions replace these at link time, so this file needs no list
// of what is modelled. Generated from entry_points.inc (see gen_entry_points.py).
//
// fc_api.h makes cuda.h declare every exported variant (the _ptsz/_ptds and the old-ABI ones
// too), so each definition below is checked against the header's own declaration: a wrong
// parameter list is a "conflicting declaration" error.
#include "fc_api.h"

#include <cudaProfiler.h>
#include <cudaProfilerTypedefs.h>

#include "stub_body.h"

#define FC_ENTRY(base, version, per_thread, symbol, pfn, params) \
  FC_STUB CUresult symbol params { return fc::unsupported(#symbol); }
#include "entry_points.inc"
#undef FC_ENTRY

namespace fc {
CUresult unsupported(const char *name) {
  (void)name;
  return CUDA_ERROR_NOT_SUPPORTED;
}
}  // namespace fc
