// Owns self_test_with_gil(): the check of the layout-based walk against CPython's public frame
// API, for 3.10-3.12 where no debug offsets exist (3.13 is checked in init() and again here).
// The public API allocates frame objects, so this runs only when the caller holds the GIL and no
// allocator lock; it is never called from the hook itself.
#include <dlfcn.h>

#include "python_frames.h"
#include "python_state.h"

namespace vt::py {
using namespace detail;

bool self_test_with_gil() {
  const Runtime* rt = active();
  if (!rt) return false;
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
  if (!attached || !gil_check || !get_frame || !get_back || !get_code || !get_line || !addr2line || !decref) return false;
  if (rt->minor >= 11 && !get_lasti) return false;
  void* mine = rt->get_tstate();
  if (!mine || attached() != mine || !gil_check()) return false;  // GIL not held: no verdict

  constexpr int kMax = 256;
  RawFrame raw[kMax];
  int n = capture(raw, kMax);
  const char* bad = nullptr;
  void* f = get_frame();
  void* owned = nullptr;  // the first frame is borrowed, the ones from PyFrame_GetBack are not
  int i = 0;
  for (; f && i < kMax && !bad; ++i) {
    if (i >= n) {  // (a stack deeper than kMax is compared up to kMax only)
      if (n < kMax) bad = "Python self-test: the walk found fewer frames than the public API";
      break;
    }
    void* code = get_code(f);
    int addr = raw[i].instr == kInstrNotStarted ? -1 : static_cast<int>(raw[i].instr);
    if (reinterpret_cast<uint64_t>(code) != raw[i].code) {
      bad = "Python self-test: code object mismatch";
    } else if (rt->minor >= 11) {
      if (get_lasti(f) != addr) bad = "Python self-test: instruction offset mismatch";
    } else if (ld<uintptr_t>(reinterpret_cast<uintptr_t>(f) + rt->L->fr_trace) == 0 &&
               get_line(f) != addr2line(code, addr)) {  // a traced 3.10 frame reports f_lineno
      bad = "Python self-test: line number mismatch";
    }
    decref(code);
    if (bad) break;
    void* back = get_back(f);
    if (owned) decref(owned);
    owned = f = back;
  }
  if (owned) decref(owned);
  if (!bad && !f && i < n) bad = "Python self-test: the walk found more frames than the public API";
  if (bad) {
    disable(bad);
    return false;
  }
  return true;
}

}  // namespace vt::py
