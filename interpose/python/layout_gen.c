/* Offline generator for python_layouts.h (NOT part of any build): compiled once per CPython
 * version and build flavour against that version's own headers (internal ones included, hence
 * Py_BUILD_CORE), it prints the layout-table row (in Layout's field order, paste-able) the walker
 * needs and, for 3.13+, the row of _Py_DebugOffsets positions. The shipped walker never includes
 * Python.h; this file is how its numbers were obtained and how to add or re-check a version:
 *   interpose/python/layout_gen.sh            (every pyenv 3.10-3.13 and Debian 3.14/3.15 found,
 *                                              GIL and, with -DPy_GIL_DISABLED, free-threaded)
 * With a path argument (3.13+) it also writes the interpreter's own _Py_DebugOffsets block, as
 * _Py_DebugOffsets_INIT fills it for this build, to that file: tests/python/fixtures/ keeps them
 * so the synthetic tests check the table against the headers, not against itself.
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
#if PY_MINOR_VERSION == 13
/* 3.13 has no _Py_DebugOffsets_INIT: layout_gen.sh cuts the .debug_offsets part out of
 * _PyRuntimeState_INIT (pycore_runtime_init.h) into this header. */
#include "debug_offsets_313_init.h"
#endif
#if PY_MINOR_VERSION >= 14
#include <internal/pycore_debug_offsets.h>
#include <internal/pycore_interpframe_structs.h>
#include <internal/pycore_stackref.h>
#include <internal/pycore_tstate.h>
#endif

#ifdef Py_GIL_DISABLED
#define FT 1
#else
#define FT 0
#endif

/* Index of the lowest set bit of the state word after setting one bitfield to all ones. */
static int state_bit(int which) {
  PyASCIIObject a;
  memset(&a, 0, sizeof a);
  if (which == 0) a.state.kind = 7;
  if (which == 1) a.state.compact = 1;
  if (which == 2) a.state.ascii = 1;
  unsigned int w;
  memcpy(&w, &a.state, sizeof w);
  return __builtin_ctz(w);
}

int main(int argc, char** argv) {
  int m = PY_MINOR_VERSION;
  printf("  // %s%s\n", PY_VERSION, FT ? " free-threaded" : "");
  printf("  {%d, %s, FrameKind::%s,\n", m, FT ? "true" : "false",
         m == 10 ? "kFrameObject" : m <= 12 ? "kCFrameInterp" : "kDirectInterp");
  /* PyObject / PyVarObject / PyTypeObject header */
  printf("   %zu, %zu, %zu, %zu, %zu,\n", offsetof(PyObject, ob_type), offsetof(PyVarObject, ob_size),
         offsetof(PyTypeObject, tp_name), offsetof(PyTypeObject, tp_basicsize), offsetof(PyTypeObject, tp_itemsize));
  /* PyThreadState: interp, frame link, cframe->current_frame, base_frame */
  size_t ts_frame, cframe_current = 0, ts_base = 0;
#if PY_MINOR_VERSION == 10
  ts_frame = offsetof(PyThreadState, frame);
#elif PY_MINOR_VERSION <= 12
  ts_frame = offsetof(PyThreadState, cframe), cframe_current = offsetof(_PyCFrame, current_frame);
#else
  ts_frame = offsetof(PyThreadState, current_frame);
#endif
#if PY_MINOR_VERSION >= 15
  ts_base = offsetof(PyThreadState, base_frame);
#endif
  printf("   %zu, %zu, %zu, %zu,\n", offsetof(PyThreadState, interp), ts_frame, cframe_current, ts_base);
  /* Frame: code, previous, instr, owner, f_trace (3.10), tlbc_index (3.14t+), frame type size */
  size_t fr_code, fr_prev, fr_instr, fr_owner = 0, fr_trace = 0, fr_tlbc = 0, frame_basicsize;
#if PY_MINOR_VERSION == 10
  fr_code = offsetof(PyFrameObject, f_code), fr_prev = offsetof(PyFrameObject, f_back);
  fr_instr = offsetof(PyFrameObject, f_lasti), fr_trace = offsetof(PyFrameObject, f_trace);
  frame_basicsize = sizeof(PyFrameObject);
#else
#if PY_MINOR_VERSION <= 12
  fr_code = offsetof(_PyInterpreterFrame, f_code), fr_instr = offsetof(_PyInterpreterFrame, prev_instr);
#else
  fr_code = offsetof(_PyInterpreterFrame, f_executable), fr_instr = offsetof(_PyInterpreterFrame, instr_ptr);
#endif
  fr_prev = offsetof(_PyInterpreterFrame, previous), fr_owner = offsetof(_PyInterpreterFrame, owner);
#if PY_MINOR_VERSION >= 14 && FT
  fr_tlbc = offsetof(_PyInterpreterFrame, tlbc_index);
#endif
  /* PyFrame_Type.tp_basicsize on 3.11+: the frame object header plus the interpreter frame's
   * fixed part, so it also pins where localsplus starts. */
  frame_basicsize = offsetof(PyFrameObject, _f_frame_data) + offsetof(_PyInterpreterFrame, localsplus);
#endif
  printf("   %zu, %zu, %zu, %zu, %zu, %zu, %zu,\n", fr_code, fr_prev, fr_instr, fr_owner, fr_trace, fr_tlbc,
         frame_basicsize);
  /* Owner values: generator, the lowest shim/entry owner, the highest valid owner; then the
   * f_executable tag bits and the tag of a counted/deferred reference (3.14+ _PyStackRef). */
  int own_gen = 0, own_shim = 255, own_max = 0, tag_bits = 0, tag_ref = 0;
#if PY_MINOR_VERSION == 11
  own_gen = FRAME_OWNED_BY_GENERATOR, own_max = FRAME_OWNED_BY_FRAME_OBJECT;
#elif PY_MINOR_VERSION == 12 || PY_MINOR_VERSION == 13
  own_gen = FRAME_OWNED_BY_GENERATOR, own_shim = FRAME_OWNED_BY_CSTACK, own_max = FRAME_OWNED_BY_CSTACK;
#elif PY_MINOR_VERSION == 14
  own_gen = FRAME_OWNED_BY_GENERATOR, own_shim = FRAME_OWNED_BY_INTERPRETER, own_max = FRAME_OWNED_BY_CSTACK;
#elif PY_MINOR_VERSION >= 15
  own_gen = FRAME_OWNED_BY_GENERATOR, own_shim = FRAME_OWNED_BY_INTERPRETER, own_max = FRAME_OWNED_BY_INTERPRETER;
#endif
#if PY_MINOR_VERSION >= 14
  tag_bits = (int)Py_TAG_BITS, tag_ref = (int)Py_TAG_REFCNT;
#endif
  printf("   %d, %d, %d, %d, %d,\n", own_gen, own_shim, own_max, tag_bits, tag_ref);
  /* PyCodeObject */
#if PY_MINOR_VERSION == 10
  printf("   %zu, 0, 0, 0, %zu, 0,\n", offsetof(PyCodeObject, co_name), sizeof(PyCodeObject));
#else
  size_t co_tlbc = 0;
#if PY_MINOR_VERSION >= 14 && FT
  co_tlbc = offsetof(PyCodeObject, co_tlbc);
#endif
  printf("   %zu, %zu, %zu, %zu, %zu, %zu,\n", offsetof(PyCodeObject, co_qualname),
         offsetof(PyCodeObject, _co_firsttraceable), offsetof(PyCodeObject, co_code_adaptive), co_tlbc,
         offsetof(PyCodeObject, co_code_adaptive), sizeof(_Py_CODEUNIT));
#endif
  printf("   %zu, %zu, %zu,\n", offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_firstlineno),
         offsetof(PyCodeObject, co_linetable));
  /* str, bytes */
  printf("   %zu, %zu, %zu, %zu, %zu,\n", offsetof(PyASCIIObject, length), offsetof(PyASCIIObject, state),
         sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), sizeof(PyUnicodeObject));
  printf("   %d, %d, %d, %zu, %zu},\n", state_bit(0), state_bit(1), state_bit(2), offsetof(PyVarObject, ob_size),
         offsetof(PyBytesObject, ob_sval));

#if PY_MINOR_VERSION >= 13
#define P(f) offsetof(_Py_DebugOffsets, f)
  /* Where each checked field lives inside this minor's _Py_DebugOffsets (0: not in the block). */
  size_t d_ts_base = 0, d_fr_tlbc = 0, d_co_tlbc = 0, d_compact = 0;
#if PY_MINOR_VERSION >= 14
  d_fr_tlbc = P(interpreter_frame.tlbc_index), d_co_tlbc = P(code_object.co_tlbc);
#endif
#if PY_MINOR_VERSION >= 15
  d_ts_base = P(thread_state.base_frame), d_compact = P(unicode_object.compactunicodeobject_size);
#endif
  printf("  // _Py_DebugOffsets of %s%s: %zu bytes\n", PY_VERSION, FT ? " free-threaded" : "", sizeof(_Py_DebugOffsets));
  printf("  {%d, %s, %zu,\n", m, FT ? "true" : "false", sizeof(_Py_DebugOffsets));
  printf("   %zu, %zu, %zu, %zu, %zu,\n", P(version), P(free_threaded), P(thread_state.interp),
         P(thread_state.current_frame), d_ts_base);
  printf("   %zu, %zu, %zu, %zu, %zu,\n", P(interpreter_frame.previous), P(interpreter_frame.executable),
         P(interpreter_frame.instr_ptr), P(interpreter_frame.owner), d_fr_tlbc);
  printf("   %zu, %zu, %zu, %zu, %zu, %zu,\n", P(code_object.filename), P(code_object.qualname),
         P(code_object.linetable), P(code_object.firstlineno), P(code_object.co_code_adaptive), d_co_tlbc);
  printf("   %zu, %zu, %zu, %zu,\n", P(pyobject.ob_type), P(type_object.tp_name), P(bytes_object.ob_size),
         P(bytes_object.ob_sval));
  printf("   %zu, %zu, %zu, %zu},\n", P(unicode_object.state), P(unicode_object.length),
         P(unicode_object.asciiobject_size), d_compact);
  if (argc > 1) {
    static const _Py_DebugOffsets d = _Py_DebugOffsets_INIT(_Py_Debug_Cookie);
    FILE* f = fopen(argv[1], "wb");
    if (!f || fwrite(&d, sizeof d, 1, f) != 1 || fclose(f) != 0) {
      perror(argv[1]);
      return 1;
    }
  }
#endif
  return 0;
}
