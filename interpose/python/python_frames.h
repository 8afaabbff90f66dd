// Public interface of the Python frame walker: from inside an allocation hook (any thread, GIL
// usually NOT held), capture the calling thread's own CPython frames without taking the GIL,
// allocating, locking or calling into the interpreter. CPython 3.10-3.15, GIL and free-threaded
// (3.13t-3.15t) builds; a newer minor whose _Py_DebugOffsets agree with the newest row for every
// field used is read with that row once a self-check against the public frame API has passed.
// Nothing here links libpython: the interpreter is found at run time with dlsym(RTLD_DEFAULT),
// and per-build struct layouts are carried in python_layouts.h (one binary serves them all).
// Line numbers are NOT computed here: describe_code() copies each code object's raw line table
// once, and the analyzer turns (table, instr) into a line offline (format/python_lines.h).
#pragma once

#include <cstdint>

namespace vt::py {

// `instr` is a BYTE offset into the code object's bytecode (code units * 2) of the instruction
// the frame is executing, i.e. exactly the `addrq` that PyCode_Addr2Line() takes:
// 3.10 f_lasti*2, 3.11/3.12 (prev_instr - code start)*2, 3.13+ (instr_ptr - bytecode start)*2,
// where a free-threaded 3.14+ frame's bytecode is its thread's copy (co_tlbc[tlbc_index]).
// kInstrNotStarted (a 3.10 frame with f_lasti == -1, or a 3.11/3.12 generator frame before its
// first instruction) means "use co_firstlineno", like PyCode_Addr2Line(co, -1).
// kInstrUnknown: the frame and its code are known but not the instruction (a free-threaded
// frame whose thread-local bytecode copy could not be found safely): "line unknown".
struct RawFrame {
  uint64_t code;   // address of the PyCodeObject; valid only while the frame is live (the hook)
  uint32_t instr;  // byte offset, see above
  bool entry;      // the outermost frame of one C-level eval call (_PyEval_EvalFrameDefault):
                   // where this group of Python frames joins the native stack
};
constexpr uint32_t kInstrNotStarted = 0xFFFFFFFFu;
constexpr uint32_t kInstrUnknown = 0xFFFFFFFEu;

enum class Status { kUnavailable, kOk, kUnsupported };

// One-time lazy setup, no GIL, safe from any thread; a single relaxed-acquire load afterwards.
// Best called early (library constructor or session start) rather than first from inside a hook
// under an application lock: the first call does dlsym() lookups, which take the loader lock.
// While another thread is still initialising it returns kUnavailable (never waits).
// `why` (may be null) receives a static one-line explanation ("ok" when all is well; for a newer
// minor accepted pending its self-check, what was accepted and why).
Status init(const char** why);

// Walks the CALLING thread's own frame chain, innermost first, into out[0..max); returns the
// count (0: no Python, no thread state, no frames, or walker disabled). No GIL, no allocation,
// no locks; the only interpreter calls are PyGILState_GetThisThreadState (a thread-local read)
// and, until it first answers non-null, PyInterpreterState_Main (a field read). Frames whose
// thread state belongs to a sub-interpreter are not walked.
int capture(RawFrame* out, int max);

// The same walk for the recorder, one 64-bit key per frame (what its stack interning hashes;
// never written to a trace): kKeyPython | kKeyEntry if entry | code << kKeyCodeShift | the
// instruction as (code units + 1), saturating at kKeyInstrUnknown (0: not started). Code
// objects are 8-aligned user addresses below 2^47, so the code needs no more than bits 18..61.
constexpr uint64_t kKeyPython = 1ull << 63;  // = format::kFramePython: native addresses never have it
constexpr uint64_t kKeyEntry = 1ull << 62;
constexpr int kKeyCodeShift = 15, kKeyCodeBits = 47;
constexpr uint64_t kKeyInstrUnknown = (1ull << 18) - 1;
// `memo` (may be null): the calling thread's own KeyMemo, kept by the caller between calls.
struct KeyMemo;
int capture_keys(uint64_t* out, int max, KeyMemo* memo = nullptr);

// What makes a repeated stack cheap: per thread, frames by (instruction pointer, f_executable,
// owner) -> the key they gave. Those determine the key (the code object's address and the
// instruction offset from its own bytecode: a frame references a live code object, and its
// instruction pointer lies inside that object), so a frame seen before at the same instruction
// costs four loads from the frame and one from here, not the code object's. Direct-mapped by
// instruction pointer: recursion and the unchanged outer part of a stack hit wherever the top
// changed. Zero-initialised = empty (no frame has ip 0). Not used for free-threaded frames on a
// thread-local bytecode copy (their key depends on where the copy is), nor by capture().
struct KeyMemo {
  struct Entry {
    uint64_t ip, exe, meta, key;  // key 0: the frame was incomplete (skipped)
  };
  static constexpr int kBits = 8;
  Entry e[1 << kBits];
};
inline bool is_python_key(uint64_t key) { return key & kKeyPython; }
inline RawFrame unpack_key(uint64_t key) {
  uint64_t field = key & kKeyInstrUnknown;
  uint32_t instr = field == 0 ? kInstrNotStarted
                   : field == kKeyInstrUnknown ? kInstrUnknown
                                               : static_cast<uint32_t>((field - 1) * 2);
  return {(key & ~(kKeyPython | kKeyEntry)) >> kKeyCodeShift & ~uint64_t(7), instr, (key & kKeyEntry) != 0};
}

// Copies what the analyzer needs about a code object that capture() returned on this thread
// moments ago (the frame, hence the code object, must still be live). Strings are read directly
// from compact str objects and converted to UTF-8. `truncated` is set when the line table or a
// string did not fit. Returns false (out partially written) if anything looks wrong.
struct CodeInfo {
  char filename[512];
  char qualname[256];  // co_qualname on 3.11+, co_name on 3.10
  int firstlineno;
  uint8_t linetable[4096];  // 3.10: co_linetable (PEP 626); 3.11+: co_linetable (location table)
  uint32_t linetable_len;
  bool truncated;
  int py_minor;  // the interpreter's minor: selects the line-table format (format::python_line)
};
bool describe_code(uint64_t code, CodeInfo* out);

// Whether the calling thread has a Python thread state at all (autograd workers: state, no
// frames). False whenever the walker is unavailable, refused or disabled (not while a newer
// minor waits for its self-check). Also where the
// one-time self-check gets scheduled (see below): the recorder calls this once per thread.
bool thread_has_state();

// Compares capture() against the public frame API (PyEval_GetFrame, PyFrame_GetBack,
// PyFrame_GetCode, PyFrame_GetLasti/PyFrame_GetLineNumber, PyCode_Addr2Line against the copied
// line table, resolved with dlsym). MUST be called by a thread that HOLDS THE GIL and holds no
// allocator lock: the public API creates frame objects, which can run the GC (finalizers may free
// tensors). Call sites: the self-check below, the embedding program through an exported extern "C"
// wrapper called with ctypes.PyDLL (which keeps the GIL), or a test (tests/python/pyalloc.cpp).
// On a mismatch it disables the walker for the rest of the process (capture() returns 0 and
// init() reports kUnsupported with the reason). Returns true when the walk matched; false on a
// mismatch, or without any effect when Python is unavailable/refused or the GIL is not held.
bool self_test_with_gil();

// The self-check: the first time a thread with a Python thread state asks thread_has_state()
// (or, for a newer minor still waiting, calls capture()), Py_AddPendingCall schedules
// self_test_with_gil() to run once on the main thread, with the GIL, at its next bytecode
// boundary. On 3.10-3.15 it confirms the table (frames are recorded meanwhile); on a newer minor
// frames start only once it has passed. Its verdict goes to the status listener.
// `on`: frames are (now) being captured; `why`: a static one-line explanation.
using StatusListener = void (*)(bool on, const char* why);
void set_status_listener(StatusListener fn);

}  // namespace vt::py
