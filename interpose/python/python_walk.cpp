// Owns capture(): the per-event walk of the calling thread's own Python frame chain, without the
// GIL. Safe because only the owning thread pushes/pops its frames and it is busy inside our hook;
// other threads (sys._current_frames, the GC, a free-threaded stop-the-world) only read them or
// attach frame objects, which moves nothing we follow. Every pointer followed is checked
// (non-null, aligned, the f_executable tag, ob_type of code objects and of 3.10 frame objects
// against the interpreter's own type objects, owner values, the instruction pointer inside the
// bytecode it belongs to), and the walk is capped, so a wrong layout stops the walk instead of
// producing junk. The one structure another thread may replace under us, a free-threaded code
// object's array of thread-local bytecode copies, is read seqlock-style (tlbc_copy()).
#include <utility>

#include "python_frames.h"
#include "python_state.h"

namespace vt::py {
using namespace detail;
namespace {

// Hops include skipped frames (C-stack entry frames, incomplete frames), bounded so that even a
// corrupt or cyclic chain ends.
inline int hop_cap(int max) { return max * 2 + 64; }

// A _PyCodeArray larger than this is not believed (it holds one slot per thread index).
constexpr int64_t kMaxTlbcEntries = 1 << 20;

// The walkers are instantiated per table row (I = index into kLayouts) so every offset is an
// immediate: ~20-30 instructions per frame, one dependent load (the link) on the critical path.

// 3.10: PyFrameObject chain from ts->frame via f_back; f_lasti counts code units (-1: not started).
template <int I>
int walk_frame_objects(const Runtime* rt, uintptr_t f, RawFrame* out, int max) {
  constexpr const Layout& L = kLayouts[I];
  const uintptr_t frame_type = rt->frame_type, code_type = rt->code_type;
  int n = 0;
  for (int hops = hop_cap(max); f && n < max && hops > 0; --hops) {
    if (!ptr_ok(f) || ld<uintptr_t>(f + L.ob_type) != frame_type) break;
    uintptr_t code = ld<uintptr_t>(f + L.fr_code);
    if (!ptr_ok(code) || ld<uintptr_t>(code + L.ob_type) != code_type) break;
    int lasti = ld<int>(f + L.fr_instr);
    if (lasti < -1 || lasti >= (1 << 28)) break;
    // Every 3.10 frame object is run by its own _PyEval_EvalFrameDefault call.
    out[n++] = {code, lasti < 0 ? kInstrNotStarted : static_cast<uint32_t>(lasti) * 2, true};
    f = ld<uintptr_t>(f + L.fr_previous);
  }
  return n;
}

// Free-threaded 3.14+: the start of thread-local bytecode copy `idx` of `code`, or 0 if it cannot
// be had safely. co_tlbc points to {Py_ssize_t size; char* entries[size]}; another thread that
// needs a higher index swaps in a bigger array and frees the old one once every attached thread
// has passed a quiescent point (we are detached: that does not wait for us). So: an out-of-range
// index is never followed, and the values read are used only if co_tlbc still points to the same
// array afterwards (until it is swapped it is not freed). The copy itself is this thread's and
// in use by this frame, so it stays. Index 0 is the code object's own bytecode (no array read).
template <int I>
uintptr_t tlbc_copy(uintptr_t code, int32_t idx) {
  constexpr const Layout& L = kLayouts[I];
  if (idx == 0) return code + L.co_code_adaptive;
  const auto* slot = reinterpret_cast<const std::atomic<uintptr_t>*>(code + L.co_tlbc);
  uintptr_t arr = slot->load(std::memory_order_acquire);
  if (!ptr_ok(arr) || idx < 0) return 0;
  int64_t size = ld<int64_t>(arr);
  if (size <= idx || size > kMaxTlbcEntries) return 0;
  uintptr_t copy = ld<uintptr_t>(arr + 8 + 8 * static_cast<uintptr_t>(idx));
  std::atomic_thread_fence(std::memory_order_acquire);  // the reads above happen before the re-read
  if (slot->load(std::memory_order_relaxed) != arr) return 0;
  return copy >= 4096 && (copy & 1) == 0 ? copy : 0;
}

// 3.11+: _PyInterpreterFrame chain via `previous`. 3.11/3.12 keep prev_instr (the code unit
// before the next instruction), 3.13+ instr_ptr (the current one); both give CPython's own LASTI
// as (ptr - bytecode start), which is what PyFrame_GetLasti/GetLineNumber use.
template <int I>
int walk_interp_frames(const Runtime* rt, uintptr_t ts, uintptr_t f, RawFrame* out, int max) {
  constexpr const Layout& L = kLayouts[I];
  const uintptr_t code_type = rt->code_type;
  // 3.15+: every chain ends at the thread's sentinel base frame (owned by the interpreter, no
  // code): stop there without reading it.
  uintptr_t base = 0;
  if constexpr (L.ts_base_frame != 0) base = ld<uintptr_t>(ts + L.ts_base_frame);
  int n = 0;
  for (int hops = hop_cap(max); f && n < max && hops > 0; --hops) {
    if constexpr (L.ts_base_frame != 0) {
      if (f == base) break;
    }
    if (!ptr_ok(f)) break;
    uint8_t owner = ld<uint8_t>(f + L.fr_owner);
    uintptr_t next = ld<uintptr_t>(f + L.fr_previous);
    if (owner > L.owner_max) break;
    if (owner >= L.owner_shim) {
      // The shim frame of a C->Python entry (3.12/3.13 CSTACK; 3.14+ INTERPRETER, and 3.14's
      // CSTACK): no Python code; the frame before it started that eval call.
      if (n > 0) out[n - 1].entry = true;
      f = next;
      continue;
    }
    uintptr_t code = ld<uintptr_t>(f + L.fr_code);
    if constexpr (L.exec_tag_bits != 0) {  // 3.14+: a _PyStackRef, tagged like CPython's readers mask it
      uintptr_t tag = code & L.exec_tag_bits;
      if (tag != 0 && tag != L.exec_tag_ref) break;  // a tagged int or an invalid ref: not a code object
      code ^= tag;
    }
    if (!ptr_ok(code) || ld<uintptr_t>(code + L.ob_type) != code_type) break;
    intptr_t size = ld<intptr_t>(code + L.ob_size);  // ob_size: code units
    uintptr_t ip = ld<uintptr_t>(f + L.fr_instr);
    uintptr_t bytecode = code + L.co_code_adaptive;
    if constexpr (L.fr_tlbc_index != 0) bytecode = tlbc_copy<I>(code, ld<int32_t>(f + L.fr_tlbc_index));
    uint32_t instr;
    if (L.fr_tlbc_index != 0 && bytecode == 0) {
      instr = kInstrUnknown;  // (completeness cannot be told either: the frame is kept)
    } else {
      intptr_t bytes = static_cast<intptr_t>(ip - bytecode);
      intptr_t units = bytes / 2;
      bool in_range = !(bytes & 1) && units >= -1 && units < size;
      if constexpr (L.fr_tlbc_index == 0) {
        if (!in_range) break;  // one bytecode only: a pointer outside it means a wrong layout
        instr = units < 0 ? kInstrNotStarted : static_cast<uint32_t>(units * 2);
      } else {
        // The copy was replaced or is being switched (a generator resumed by another thread).
        instr = !in_range ? kInstrUnknown : units < 0 ? kInstrNotStarted : static_cast<uint32_t>(units * 2);
      }
      // Incomplete frame (_PyFrame_IsIncomplete): pushed but not yet past its prologue; CPython's
      // own API skips these too.
      if (in_range && owner != L.owner_generator && units < ld<int>(code + L.co_firsttraceable)) {
        f = next;
        continue;
      }
    }
    // 3.11 flags the first frame of an eval call (is_entry, the byte before owner); later
    // versions put a shim frame behind it (marked above when reached).
    bool entry = false;
    if constexpr (L.minor == 11) entry = ld<uint8_t>(f + L.fr_owner - 1) != 0;
    out[n++] = {code, instr, entry};
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
    return ptr_ok(cframe) ? walk_interp_frames<I>(rt, ts, ld<uintptr_t>(cframe + L.cframe_current), out, max) : 0;
  } else {
    return walk_interp_frames<I>(rt, ts, ld<uintptr_t>(ts + L.ts_frame), out, max);
  }
}

template <size_t... I>
constexpr auto make_walkers(std::index_sequence<I...>) {
  struct Table {
    WalkFn fn[sizeof...(I)];
  };
  return Table{{&walk<int(I)>...}};
}
constexpr auto kWalkers = make_walkers(std::make_index_sequence<kLayoutCount>{});

}  // namespace

namespace detail {
WalkFn walker_for(const Layout* L) {
  long i = L - kLayouts;
  return i >= 0 && i < kLayoutCount ? kWalkers.fn[i] : nullptr;
}
}  // namespace detail

int capture(RawFrame* out, int max) {
  const Runtime* rt = active();
  if (__builtin_expect(!rt, 0)) {
    if (g_check_wanted.load(std::memory_order_relaxed)) schedule_self_check();
    return 0;
  }
  return capture_with(rt, out, max);
}

}  // namespace vt::py
