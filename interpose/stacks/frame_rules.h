// How to step from a native frame to its caller on x86-64, read from the DWARF call frame
// information of the object the address lies in (.eh_frame, found through .eh_frame_hdr's sorted
// table: what libunwind reads). Only the common form is described: the CFA is rsp or rbp plus a
// constant, the return address is at CFA-8, rbp is kept or saved at a constant offset from the
// CFA, rsp is the CFA. That is libunwind's own fast-trace frame; anything else (no FDE, a signal
// frame, DWARF expressions) is `Other`, and fast_unwind.h leaves such a stack to libunwind.
#pragma once

#include <cstdint>

namespace vt {

enum class FrameKind : uint8_t {
  Empty = 0,  // (a rule cache's unused slot)
  CfaRsp,     // CFA = rsp + cfa_offset
  CfaRbp,     // CFA = rbp + cfa_offset
  Outermost,  // the return address or rbp is undefined: the stack ends here (_start, clone3)
  Other,      // not of the common form, or no call frame information at all
};

inline constexpr int16_t kRbpKept = INT16_MIN;

struct FrameRule {
  int32_t cfa_offset = 0;
  int16_t rbp_offset = kRbpKept;  // the caller's rbp is at CFA + rbp_offset; kRbpKept: rbp unchanged
  FrameKind kind = FrameKind::Other;
};

// The rule at `pc`, an address inside the instruction (a return address less one, or the first
// frame's own address). Walks the loader's list (dl_iterate_phdr): once per address per thread
// (fast_unwind.cpp caches it). Never reads outside the loaded objects' mapped call frame data.
// *unloads gets the loader's count of objects unloaded so far (dl_phdr_info's dlpi_subs): a cache
// of rules made before an unload may describe code that is gone.
FrameRule frame_rule_at(uint64_t pc, uint64_t* unloads);

// The rule of the FDE at `fde` (an .eh_frame record, with the CIE it points to) at `pc`, or Other
// when the FDE does not cover pc or is not understood. Every read stays in [lo, hi). For tests.
FrameRule frame_rule_from_fde(const uint8_t* fde, const uint8_t* lo, const uint8_t* hi, uint64_t pc);

}  // namespace vt
