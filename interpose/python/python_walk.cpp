// Owns capture(): the per-event walk of the calling thread's own Python frame chain, without the
// GIL. Safe because only the owning thread pushes/pops its frames and it is busy inside our hook;
// other threads (sys._current_frames, the GC) only read them or attach frame objects, which moves
// nothing we follow. Every pointer followed is checked (non-null, aligned, ob_type of code objects
// and of 3.10 frame objects against the interpreter's own type objects, owner values, instruction
// pointer inside the code),
// and the walk is capped, so a wrong layout stops the walk instead of producing junk.
#include "python_frames.h"
#include "python_state.h"

namespace vt::py {
using namespace detail;
namespace {

// Hops include skipped frames (C-stack entry frames, incomplete frames), bounded so that even a
// corrupt or cyclic chain ends.
inline int hop_cap(int max) { return max * 2 + 64; }

// The walkers are instantiated per table row (I = index into kLayouts) so every offset is an
// immediate: ~40 instructions per frame, one dependent load (the link) on the critical path.

// 3.10: PyFrameObject chain from ts->frame via f_back; f_lasti counts code units (-1: not started).
template <int I>
int walk_frame_objects(const Runtime* rt, uintptr_t f, RawFrame* out, int max) {
  constexpr const Layout& L = kLayouts[I];
  const uintptr_t frame_type = rt->frame_type, code_type = rt->code_type;
  int n = 0;
  for (int hops = hop_cap(max); f && n < max && hops > 0; --hops) {
    if (!ptr_ok(f) || ld<uintptr_t>(f + kObType) != frame_type) break;
    uintptr_t code = ld<uintptr_t>(f + L.fr_code);
    if (!ptr_ok(code) || ld<uintptr_t>(code + kObType) != code_type) break;
    int lasti = ld<int>(f + L.fr_instr);
    if (lasti < -1 || lasti >= (1 << 28)) break;
    // Every 3.10 frame object is run by its own _PyEval_EvalFrameDefault call.
    out[n++] = {code, lasti < 0 ? kInstrNotStarted : static_cast<uint32_t>(lasti) * 2, true};
    f = ld<uintptr_t>(f + L.fr_previous);
  }
  return n;
}

// 3.11-3.13: _PyInterpreterFrame chain via `previous`. 3.11/3.12 keep prev_instr (the code unit
// before the next instruction), 3.13 instr_ptr (the current one); both give CPython's own LASTI
// as (ptr - _PyCode_CODE(code)), which is what PyFrame_GetLasti/GetLineNumber use.
template <int I>
int walk_interp_frames(const Runtime* rt, uintptr_t f, RawFrame* out, int max) {
  constexpr const Layout& L = kLayouts[I];
  constexpr uint8_t max_owner = L.minor >= 12 ? kOwnedByCStack : kOwnedByFrameObject;
  const uintptr_t code_type = rt->code_type;
  int n = 0;
  for (int hops = hop_cap(max); f && n < max && hops > 0; --hops) {
    if (!ptr_ok(f)) break;
    uint8_t owner = ld<uint8_t>(f + L.fr_owner);
    uintptr_t next = ld<uintptr_t>(f + L.fr_previous);
    if (owner > max_owner) break;
    if (owner == kOwnedByCStack) {  // the shim frame of a C->Python entry, no Python code
      f = next;
      continue;
    }
    uintptr_t code = ld<uintptr_t>(f + L.fr_code);
    if (!ptr_ok(code) || ld<uintptr_t>(code + kObType) != code_type) break;
    intptr_t bytes = static_cast<intptr_t>(ld<uintptr_t>(f + L.fr_instr) - (code + L.co_code_adaptive));
    if (bytes & 1) break;
    intptr_t units = bytes / 2;
    // Incomplete frame (_PyFrame_IsIncomplete): pushed but not yet past its prologue; CPython's
    // own API skips these too.
    if (owner != kOwnedByGenerator && units < ld<int>(code + L.co_firsttraceable)) {
      f = next;
      continue;
    }
    if (units < -1 || units >= ld<intptr_t>(code + kVarObSize)) break;  // ob_size: code units
    // Where the eval call that runs this frame began: 3.11 flags it (is_entry, the byte before
    // owner); 3.12+ put a C-stack shim frame (or nothing) right behind it.
    bool entry;
    if constexpr (L.minor == 11) {
      entry = ld<uint8_t>(f + L.fr_owner - 1) != 0;
    } else {
      entry = !next || (ptr_ok(next) && ld<uint8_t>(next + L.fr_owner) == kOwnedByCStack);
    }
    out[n++] = {code, units < 0 ? kInstrNotStarted : static_cast<uint32_t>(units * 2), entry};
    f = next;
  }
  if (n > 0) out[n - 1].entry = true;  // the outermost frame always starts a call
  return n;
}

// Reaches the first frame from the thread state per row kind, then walks.
template <int I>
int walk(const Runtime* rt, uintptr_t ts, RawFrame* out, int max) {
  constexpr const Layout& L = kLayouts[I];
  if constexpr (L.kind == FrameKind::kFrameObject) {
    return walk_frame_objects<I>(rt, ld<uintptr_t>(ts + L.ts_frame), out, max);
  } else if constexpr (L.kind == FrameKind::kCFrameInterp) {
    uintptr_t cframe = ld<uintptr_t>(ts + L.ts_frame);
    return ptr_ok(cframe) ? walk_interp_frames<I>(rt, ld<uintptr_t>(cframe + L.cframe_current), out, max) : 0;
  } else {
    return walk_interp_frames<I>(rt, ld<uintptr_t>(ts + L.ts_frame), out, max);
  }
}

}  // namespace

int capture(RawFrame* out, int max) {
  if (max <= 0) return 0;
  const Runtime* rt = active();
  if (!rt) return 0;
  uintptr_t ts = this_thread_state(rt);
  if (!ts) return 0;
  switch (rt->L - kLayouts) {
    case 0: return walk<0>(rt, ts, out, max);
    case 1: return walk<1>(rt, ts, out, max);
    case 2: return walk<2>(rt, ts, out, max);
    case 3: return walk<3>(rt, ts, out, max);
  }
  static_assert(sizeof kLayouts / sizeof kLayouts[0] == 4, "add a case per table row");
  return 0;
}

}  // namespace vt::py
