// Owns capture() and capture_keys(): the per-event walk of the calling thread's own Python frame
// chain, without the GIL. Safe because only the owning thread pushes/pops its frames and it is busy inside our hook;
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

// A budget for frames passed over (C-stack entry frames, incomplete frames) and, on 3.10, for
// all hops, so that even a corrupt or cyclic chain ends.
inline int hop_cap(int max) { return max * 2 + 64; }

// A _PyCodeArray larger than this is not believed (it holds one slot per thread index).
constexpr int64_t kMaxTlbcEntries = 1 << 20;

// The walkers are instantiated per table row (I = index into kLayouts) and per output (Out:
// RawFrame records, or the recorder's packed keys) so every offset is an immediate and nothing is
// copied twice: ~40 instructions per frame (a memo hit) to ~50 (a first sighting), one dependent
// load (the link) on the critical path.
struct RawOut {
  static constexpr bool kMemo = false;
  RawFrame* out;
  KeyMemo* memo = nullptr;
  uint64_t put(int n, uintptr_t code, intptr_t units, bool known, bool entry) const {
    out[n] = {code, !known ? kInstrUnknown : units < 0 ? kInstrNotStarted : static_cast<uint32_t>(units * 2), entry};
    return 0;
  }
  void put_key(int, uint64_t, bool) const {}
  void mark_entry(int n) const { out[n].entry = true; }
};
struct KeyOut {
  static constexpr bool kMemo = true;
  uint64_t* out;
  KeyMemo* memo;
  // Returns the key without its entry bit (what the memo keeps).
  uint64_t put(int n, uintptr_t code, intptr_t units, bool known, bool entry) const {
    uint64_t field = known ? static_cast<uint64_t>(units + 1) : kKeyInstrUnknown;  // 0: not started
    uint64_t key = kKeyPython | (uint64_t(code) << kKeyCodeShift) | (field < kKeyInstrUnknown ? field : kKeyInstrUnknown);
    out[n] = key | (entry ? kKeyEntry : 0);
    return key;
  }
  void put_key(int n, uint64_t key, bool entry) const { out[n] = key | (entry ? kKeyEntry : 0); }
  void mark_entry(int n) const { out[n] |= kKeyEntry; }
};

inline KeyMemo::Entry& memo_slot(KeyMemo* memo, uintptr_t ip) {
  return memo->e[(ip * 0x9E3779B97F4A7C15ull) >> (64 - KeyMemo::kBits)];
}

// 3.10: PyFrameObject chain from ts->frame via f_back; f_lasti counts code units (-1: not started).
template <int I, class Out>
int walk_frame_objects(const Runtime* rt, uintptr_t f, Out out, int max) {
  constexpr const Layout& L = kLayouts[I];
  const uintptr_t frame_type = rt->frame_type, code_type = rt->code_type;
  int n = 0;
  for (int hops = hop_cap(max); ptr_ok(f) && hops > 0; --hops) {
    if (ld<uintptr_t>(f + L.ob_type) != frame_type) break;
    uintptr_t code = ld<uintptr_t>(f + L.fr_code);
    if (!ptr_ok(code) || (code >> kKeyCodeBits) || ld<uintptr_t>(code + L.ob_type) != code_type) break;
    int lasti = ld<int>(f + L.fr_instr);
    if (lasti < -1 || lasti >= (1 << 28)) break;
    // Every 3.10 frame object is run by its own _PyEval_EvalFrameDefault call.
    out.put(n++, code, lasti, true, true);
    if (n == max) break;
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
template <int I, class Out>
int walk_interp_frames(const Runtime* rt, uintptr_t ts, uintptr_t f, Out out, int max) {
  constexpr const Layout& L = kLayouts[I];
  const uintptr_t code_type = rt->code_type;
  // 3.15+: every chain ends at the thread's sentinel base frame (owned by the interpreter, no
  // code): stop there without reading it. Before 3.15 the chain ends with null.
  uintptr_t stop = 0;
  if constexpr (L.ts_base_frame != 0) stop = ld<uintptr_t>(ts + L.ts_base_frame);
  int n = 0;
  int skips = hop_cap(max);  // frames passed over (shims, incomplete): a cyclic chain still ends
  while (f != stop && ptr_ok(f)) {
    uint8_t owner = ld<uint8_t>(f + L.fr_owner);
    uintptr_t next = ld<uintptr_t>(f + L.fr_previous);
    if (owner >= L.owner_shim) {
      if (owner > L.owner_max) break;
      // The shim frame of a C->Python entry (3.12/3.13 CSTACK; 3.14+ INTERPRETER, and 3.14's
      // CSTACK): no Python code; the frame before it started that eval call.
      if (n > 0) out.mark_entry(n - 1);
      f = next;
      if (--skips < 0) break;
      continue;
    }
    if (owner > L.owner_max) break;  // (3.11: no shim owners)
    uintptr_t exe = ld<uintptr_t>(f + L.fr_code);
    uintptr_t ip = ld<uintptr_t>(f + L.fr_instr);
    // 3.11 flags the first frame of an eval call (is_entry, the byte before owner); later
    // versions put a shim frame behind it (marked above when reached).
    bool entry = false;
    if constexpr (L.minor == 11) entry = ld<uint8_t>(f + L.fr_owner - 1) != 0;
    // The memo: a frame at an instruction seen before, with the same executable and owner, has
    // the key it had then (it is a pure function of those: see KeyMemo), so the code object is
    // not read again. Not for a free-threaded thread-local copy, whose key also depends on
    // where that copy is.
    [[maybe_unused]] KeyMemo::Entry* slot = nullptr;
    if constexpr (Out::kMemo) {
      bool memo_ok = out.memo != nullptr;
      if constexpr (L.fr_tlbc_index != 0) memo_ok = memo_ok && ld<int32_t>(f + L.fr_tlbc_index) == 0;
      if (memo_ok) {
        slot = &memo_slot(out.memo, ip);
        if (slot->ip == ip && slot->exe == exe && slot->meta == owner) {
          f = next;
          if (slot->key) {
            out.put_key(n++, slot->key, entry);
            if (n == max) break;
          } else if (--skips < 0) {  // an incomplete frame
            break;
          }
          continue;
        }
      }
    }
    uintptr_t code = exe;
    if constexpr (L.exec_tag_bits != 0) {  // 3.14+: a _PyStackRef, tagged like CPython's readers mask it
      uintptr_t tag = code & L.exec_tag_bits;
      if (tag != 0 && tag != L.exec_tag_ref) break;  // a tagged int or an invalid ref: not a code object
      code ^= tag;
    }
    // (code >> kKeyCodeBits: an address the packed key cannot hold, 5-level paging: stop.)
    if (!ptr_ok(code) || (code >> kKeyCodeBits) || ld<uintptr_t>(code + L.ob_type) != code_type) break;
    uintptr_t size = ld<uintptr_t>(code + L.ob_size);  // ob_size: code units
    uintptr_t bytecode = code + L.co_code_adaptive;
    if constexpr (L.fr_tlbc_index != 0) bytecode = tlbc_copy<I>(code, ld<int32_t>(f + L.fr_tlbc_index));
    uintptr_t bytes = ip - bytecode;
    intptr_t units = static_cast<intptr_t>(bytes) >> 1;
    // -1 <= units < size, even: one unsigned compare.
    bool in_range = !(bytes & 1) && static_cast<uintptr_t>(units + 1) <= size;
    if constexpr (L.fr_tlbc_index == 0) {
      if (!in_range) break;  // one bytecode only: a pointer outside it means a wrong layout
    } else {
      // No copy found, or the copy was replaced or is being switched (a generator resumed by
      // another thread): the frame is kept, its line unknown (completeness cannot be told either).
      in_range = in_range && bytecode != 0;
    }
    // Incomplete frame (_PyFrame_IsIncomplete): pushed but not yet past its prologue; CPython's
    // own API skips these too.
    if (in_range && owner != L.owner_generator && units < ld<int>(code + L.co_firsttraceable)) {
      if constexpr (Out::kMemo) {
        if (slot) *slot = {ip, exe, owner, 0};
      }
      f = next;
      if (--skips < 0) break;
      continue;
    }
    uint64_t key = out.put(n++, code, units, in_range, entry);
    if constexpr (Out::kMemo) {
      if (slot && in_range) *slot = {ip, exe, owner, key};
    }
    if (n == max) break;
    f = next;
  }
  if (n > 0) out.mark_entry(n - 1);  // the outermost frame always starts a call
  return n;
}

// Reaches the first frame from the thread state per row kind, then walks.
template <int I, class Out>
int walk(const Runtime* rt, uintptr_t ts, Out out, int max) {
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
template <int I>
int walk_raw(const Runtime* rt, uintptr_t ts, RawFrame* out, int max) {
  return walk<I>(rt, ts, RawOut{out}, max);
}
template <int I>
int walk_keys(const Runtime* rt, uintptr_t ts, uint64_t* out, int max, KeyMemo* memo) {
  return walk<I>(rt, ts, KeyOut{out, memo}, max);
}

template <size_t... I>
constexpr auto make_walkers(std::index_sequence<I...>) {
  struct Table {
    WalkFn raw[sizeof...(I)];
    KeyWalkFn keys[sizeof...(I)];
  };
  return Table{{&walk_raw<int(I)>...}, {&walk_keys<int(I)>...}};
}
constexpr auto kWalkers = make_walkers(std::make_index_sequence<kLayoutCount>{});

}  // namespace

namespace detail {
WalkFn walker_for(const Layout* L) {
  long i = L - kLayouts;
  return i >= 0 && i < kLayoutCount ? kWalkers.raw[i] : nullptr;
}
KeyWalkFn key_walker_for(const Layout* L) {
  long i = L - kLayouts;
  return i >= 0 && i < kLayoutCount ? kWalkers.keys[i] : nullptr;
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

int capture_keys(uint64_t* out, int max, KeyMemo* memo) {
  const Runtime* rt = active();
  if (__builtin_expect(!rt, 0)) {
    if (g_check_wanted.load(std::memory_order_relaxed)) schedule_self_check();
    return 0;
  }
  if (max <= 0) return 0;
  uintptr_t ts = this_thread_state(rt);
  return ts ? rt->walk_keys(rt, ts, out, max, memo) : 0;
}

}  // namespace vt::py
