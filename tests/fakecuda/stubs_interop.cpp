// stubs_interop.cpp — the GL, EGL and VDPAU interop entry points (stubs.cpp explains the
// scheme), declared with the stand-in types of interop_types.h.
#include "interop_types.h"
#include "stub_body.h"

#define FC_ENTRY(base, version, per_thread, symbol, pfn, params) \
  FC_STUB CUresult symbol params { return fc::unsupported(#symbol); }
#include "entry_points_interop.inc"
#undef FC_ENTRY
