/* Offline generator for python_layouts.h (NOT part of any build): compiled once per CPython
 * version against that version's own headers (internal ones included, hence Py_BUILD_CORE), it
 * prints the layout-table row (in Layout's field order, paste-able) the walker needs. The shipped walker never includes Python.h;
 * this file is how its numbers were obtained and how to add or re-check a version:
 *   interpose/python/layout_gen.sh            (prints one row per pyenv 3.10-3.13 found)
 * Bit positions of the PyASCIIObject.state bitfield are measured, not assumed. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_MINOR_VERSION == 10
#include <frameobject.h>
#else
#include <internal/pycore_frame.h>
#endif
#if PY_MINOR_VERSION >= 13
#include <internal/pycore_runtime.h>
#endif

/* Index of the lowest set bit of the state word after setting one bitfield to all ones. */
#define STATE_BIT(field, ones)                                           \
  do {                                                                   \
    PyASCIIObject a;                                                     \
    memset(&a, 0, sizeof a);                                             \
    a.state.field = ones;                                                \
    unsigned int w;                                                      \
    memcpy(&w, &a.state, sizeof w);                                      \
    printf("    /*state_%s_shift*/ %d,\n", #field, __builtin_ctz(w));   \
  } while (0)

int main(void) {
  printf("  {/*minor*/ %d, FrameKind::%s,\n", PY_MINOR_VERSION,
         PY_MINOR_VERSION == 10 ? "kFrameObject" : PY_MINOR_VERSION <= 12 ? "kCFrameInterp" : "kDirectInterp");
  printf("    /*ts_interp*/ %zu,\n", offsetof(PyThreadState, interp));
#if PY_MINOR_VERSION == 10
  printf("    /*ts_frame*/ %zu, /*cframe_current*/ 0,\n", offsetof(PyThreadState, frame));
  printf("    /*fr_code*/ %zu, /*fr_previous*/ %zu, /*fr_instr*/ %zu, /*fr_owner*/ 0, /*fr_trace*/ %zu,\n",
         offsetof(PyFrameObject, f_code), offsetof(PyFrameObject, f_back), offsetof(PyFrameObject, f_lasti),
         offsetof(PyFrameObject, f_trace));
  printf("    /*frame_basicsize*/ %zu,\n", sizeof(PyFrameObject));
  printf("    /*co_name*/ %zu, /*co_firsttraceable*/ 0, /*co_code_adaptive*/ 0,\n",
         offsetof(PyCodeObject, co_name));
  printf("    /*code_basicsize*/ %zu, /*code_itemsize*/ 0,\n", sizeof(PyCodeObject));
#else
#if PY_MINOR_VERSION <= 12
  printf("    /*ts_frame*/ %zu, /*cframe_current*/ %zu,\n", offsetof(PyThreadState, cframe),
         offsetof(_PyCFrame, current_frame));
  printf("    /*fr_code*/ %zu, /*fr_previous*/ %zu, /*fr_instr*/ %zu, /*fr_owner*/ %zu, /*fr_trace*/ 0,\n",
         offsetof(_PyInterpreterFrame, f_code), offsetof(_PyInterpreterFrame, previous),
         offsetof(_PyInterpreterFrame, prev_instr), offsetof(_PyInterpreterFrame, owner));
#else
  printf("    /*ts_frame*/ %zu, /*cframe_current*/ 0,\n", offsetof(PyThreadState, current_frame));
  printf("    /*fr_code*/ %zu, /*fr_previous*/ %zu, /*fr_instr*/ %zu, /*fr_owner*/ %zu, /*fr_trace*/ 0,\n",
         offsetof(_PyInterpreterFrame, f_executable), offsetof(_PyInterpreterFrame, previous),
         offsetof(_PyInterpreterFrame, instr_ptr), offsetof(_PyInterpreterFrame, owner));
#endif
  /* PyFrame_Type.tp_basicsize on 3.11+: the frame object header plus the interpreter frame's
   * fixed part, so it also pins where localsplus (just after owner) starts. */
  printf("    /*frame_basicsize*/ %zu,\n",
         offsetof(PyFrameObject, _f_frame_data) + offsetof(_PyInterpreterFrame, localsplus));
  printf("    /*co_name*/ %zu, /*co_firsttraceable*/ %zu, /*co_code_adaptive*/ %zu,\n",
         offsetof(PyCodeObject, co_qualname), offsetof(PyCodeObject, _co_firsttraceable),
         offsetof(PyCodeObject, co_code_adaptive));
  printf("    /*code_basicsize*/ %zu, /*code_itemsize*/ %zu,\n", offsetof(PyCodeObject, co_code_adaptive),
         sizeof(_Py_CODEUNIT));
#endif
  printf("    /*co_filename*/ %zu, /*co_firstlineno*/ %zu, /*co_linetable*/ %zu,\n",
         offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_firstlineno),
         offsetof(PyCodeObject, co_linetable));
  printf("    /*uni_length*/ %zu, /*uni_state*/ %zu, /*ascii_size*/ %zu, /*compact_size*/ %zu,\n",
         offsetof(PyASCIIObject, length), offsetof(PyASCIIObject, state), sizeof(PyASCIIObject),
         sizeof(PyCompactUnicodeObject));
  printf("    /*compact_utf8_length*/ %zu, /*compact_utf8*/ %zu, /*unicode_basicsize*/ %zu,\n",
         offsetof(PyCompactUnicodeObject, utf8_length), offsetof(PyCompactUnicodeObject, utf8),
         sizeof(PyUnicodeObject));
  STATE_BIT(kind, 7);
  STATE_BIT(compact, 1);
  STATE_BIT(ascii, 1);
  printf("    /*bytes_size*/ %zu, /*bytes_sval*/ %zu},\n", offsetof(PyVarObject, ob_size),
         offsetof(PyBytesObject, ob_sval));
  /* Fixed across 3.10-3.13 for non-trace-refs builds; checked here, assumed by the walker. */
  if (offsetof(PyObject, ob_type) != 8 || offsetof(PyTypeObject, tp_name) != 24 ||
      offsetof(PyTypeObject, tp_basicsize) != 32 || offsetof(PyTypeObject, tp_itemsize) != 40)
    printf("#error unexpected PyObject/PyTypeObject header\n");
#if PY_MINOR_VERSION >= 13
  printf("  /* 3.13 debug-offsets positions: ts=%zu fr=%zu co=%zu uni=%zu bytes=%zu free_threaded=%zu */\n",
         offsetof(_Py_DebugOffsets, thread_state), offsetof(_Py_DebugOffsets, interpreter_frame),
         offsetof(_Py_DebugOffsets, code_object), offsetof(_Py_DebugOffsets, unicode_object),
         offsetof(_Py_DebugOffsets, bytes_object), offsetof(_Py_DebugOffsets, free_threaded));
#endif
  return 0;
}
