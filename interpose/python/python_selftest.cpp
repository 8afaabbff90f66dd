// Owns self_test_with_gil() and the self-check: the comparison of the layout-based walk with
// CPython's public frame API (code objects, instruction offsets, and the line each copied line
// table gives against PyCode_Addr2Line), and its one-time scheduling on the main thread through
// Py_AddPendingCall. It confirms the table on 3.10-3.15 (where 3.10-3.12 have no debug offsets)
// and is what lets frames start on a newer minor. The public API allocates frame objects, so this
// runs only when the caller holds the GIL and no allocator lock; never from the hook itself.
#include <dlfcn.h>

#include "python_frames.h"
#include "python_lines.h"
#include "python_state.h"

namespace vt::py {
using namespace detail;

namespace detail {
std::atomic<bool> g_check_wanted{false};
}

namespace {

enum class Verdict { kMatch, kMismatch, kNoVerdict };

std::atomic<int> g_scheduled{0};     // 0: not yet, 1: a pending call is queued or has run
std::atomic<int> g_attempts{0};      // schedules so far (a check without frames is retried)
std::atomic<bool> g_passed{false};   // the first match is reported (once)
constexpr int kMaxAttempts = 8;

Verdict compare_with_api(const Runtime* rt, const char** why) {
  auto s = [](const char* n) { return dlsym(RTLD_DEFAULT, n); };
  // "Does this thread hold the GIL": the attached thread state (3.10/3.11: the global current
  // one; 3.12+: this thread's attached one) is this thread's own. PyGILState_Check alone is not
  // enough: it answers 1 unconditionally once sub-interpreters exist.
  auto attached = reinterpret_cast<void* (*)()>(s("PyThreadState_GetUnchecked"));  // 3.13+
  if (!attached) attached = reinterpret_cast<void* (*)()>(s("_PyThreadState_UncheckedGet"));
  auto gil_check = reinterpret_cast<int (*)()>(s("PyGILState_Check"));
  auto get_frame = reinterpret_cast<void* (*)()>(s("PyEval_GetFrame"));              // borrowed
  auto get_back = reinterpret_cast<void* (*)(void*)>(s("PyFrame_GetBack"));           // new ref
  auto get_code = reinterpret_cast<void* (*)(void*)>(s("PyFrame_GetCode"));           // new ref
  auto get_lasti = reinterpret_cast<int (*)(void*)>(s("PyFrame_GetLasti"));           // 3.11+
  auto get_line = reinterpret_cast<int (*)(void*)>(s("PyFrame_GetLineNumber"));
  auto addr2line = reinterpret_cast<int (*)(void*, int)>(s("PyCode_Addr2Line"));
  auto decref = reinterpret_cast<void (*)(void*)>(s("Py_DecRef"));
  if (!attached || !gil_check || !get_frame || !get_back || !get_code || !get_line || !addr2line || !decref)
    return Verdict::kNoVerdict;
  if (rt->minor >= 11 && !get_lasti) return Verdict::kNoVerdict;
  void* mine = rt->get_tstate();
  if (!mine || attached() != mine || !gil_check()) return Verdict::kNoVerdict;  // GIL not held

  constexpr int kMax = 256;
  RawFrame raw[kMax];
  int n = capture_with(rt, raw, kMax);
  CodeInfo info;  // ~5 KiB: this runs on a Python thread's stack, never in a hook
  const char* bad = nullptr;
  void* f = get_frame();
  void* owned = nullptr;  // the first frame is borrowed, the ones from PyFrame_GetBack are not
  int i = 0;
  for (; f && i < kMax && !bad; ++i) {
    if (i >= n) {  // (a stack deeper than kMax is compared up to kMax only)
      if (n < kMax) bad = "Python self-check: the walk found fewer frames than the public API";
      break;
    }
    void* code = get_code(f);
    bool unknown = raw[i].instr == kInstrUnknown;  // (free-threaded: a bytecode copy being replaced)
    int addr = raw[i].instr == kInstrNotStarted ? -1 : static_cast<int>(raw[i].instr);
    if (reinterpret_cast<uint64_t>(code) != raw[i].code) {
      bad = "Python self-check: code object mismatch";
    } else if (unknown) {
      // nothing more to compare for this frame
    } else if (rt->minor >= 11) {
      if (get_lasti(f) != addr) bad = "Python self-check: instruction offset mismatch";
    } else if (ld<uintptr_t>(reinterpret_cast<uintptr_t>(f) + rt->L->fr_trace) == 0 &&
               get_line(f) != addr2line(code, addr)) {  // a traced 3.10 frame reports f_lineno
      bad = "Python self-check: line number mismatch";
    }
    // The line the analyzer will compute offline from the copied table, against CPython's.
    if (!bad && !unknown) {
      if (!describe_code(raw[i].code, &info)) {
        bad = "Python self-check: a code object could not be described";
      } else if (!info.truncated &&
                 format::python_line(info.py_minor, info.linetable, info.linetable_len, info.firstlineno,
                                       raw[i].instr) != addr2line(code, addr)) {
        bad = "Python self-check: the copied line table gives another line than PyCode_Addr2Line";
      }
    }
    decref(code);
    if (bad) break;
    void* back = get_back(f);
    if (owned) decref(owned);
    owned = f = back;
  }
  if (owned) decref(owned);
  if (!bad && !f && i < n) bad = "Python self-check: the walk found more frames than the public API";
  if (bad) {
    *why = bad;
    return Verdict::kMismatch;
  }
  return i > 0 ? Verdict::kMatch : Verdict::kNoVerdict;  // no frames: nothing was compared
}

// The verdict's consequences: off on a mismatch; a newer minor's frames start on a match.
Verdict self_test(bool scheduled) {
  const Runtime* rt = accepted();
  if (!rt) return Verdict::kNoVerdict;
  const char* why = nullptr;
  Verdict v = compare_with_api(rt, &why);
  if (v == Verdict::kMismatch) {
    disable(why);
    report_status(false, why);
  } else if (v == Verdict::kMatch && !g_passed.exchange(true)) {
    if (rt->newer) enable_after_check();
    report_status(true, rt->newer ? "the self-check against CPython's frame API passed: frames from now on"
                                  : "the self-check against CPython's frame API passed");
  } else if (v == Verdict::kNoVerdict && scheduled) {
    g_scheduled.store(0, std::memory_order_release);  // no frames to compare: try again later
  }
  return v;
}

int self_check_callback(void*) {
  self_test(true);
  return 0;  // never raise into the interpreter
}

}  // namespace

namespace detail {
void schedule_self_check() {
  const Runtime* rt = accepted();
  if (!rt || !rt->add_pending || g_scheduled.load(std::memory_order_relaxed)) return;
  // Only after Py_Initialize (a thread state exists), and not from a sub-interpreter's thread.
  if (!this_thread_state(rt)) return;
  int expected = 0;
  if (!g_scheduled.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  if (g_attempts.fetch_add(1, std::memory_order_relaxed) >= kMaxAttempts) {
    g_check_wanted.store(false, std::memory_order_relaxed);
    if (rt->newer && !active()) {
      disable("the self-check found no Python frames on the main thread to compare: Python frames off");
      report_status(false, "the self-check found no Python frames on the main thread to compare");
    }
    return;
  }
  if (rt->add_pending(&self_check_callback, nullptr) != 0) g_scheduled.store(0, std::memory_order_release);
}
}  // namespace detail

bool self_test_with_gil() { return self_test(false) == Verdict::kMatch; }

bool thread_has_state() {
  const Runtime* rt = accepted();
  if (!rt) return false;
  // (A newer minor still waiting for its self-check counts: the thread state is a fact; only its
  // frames wait.)
  bool has = this_thread_state(rt) != 0;
  if (has) schedule_self_check();
  return has;
}

}  // namespace vt::py
