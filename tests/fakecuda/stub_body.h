// stub_body.h — what an entry point the simulator does not model does: nothing, and it says
// so with CUDA_ERROR_NOT_SUPPORTED. Each stub passes its own name, which keeps every stub's
// code distinct (identical-code folding would otherwise give two names one address, and
// tracers substitute hooks by address).
#pragma once

#include <cuda.h>

#define FC_STUB extern "C" __attribute__((weak, visibility("default"), noinline))

namespace fc {
__attribute__((visibility("hidden"))) CUresult unsupported(const char *name);
}
