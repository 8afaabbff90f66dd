// Internal: the per-CPython-build struct offsets the walker reads (no Python.h anywhere), their
// table, and where 3.13+ keep the same offsets in _Py_DebugOffsets (which init() checks against
// the table before trusting a row). Values come from interpose/python/layout_gen.{c,sh}, compiled
// against each version's own headers (3.13+ also with -DPy_GIL_DISABLED for the free-threaded
// builds). Offsets hold for release, non-trace-refs builds on 64-bit little-endian Linux; init()
// refuses anything else and cross-checks the table against the running interpreter.
#pragma once

#include <cstdint>

namespace vt::py::detail {

// How the frame chain is reached and what a frame is.
enum class FrameKind : uint8_t {
  kFrameObject,    // 3.10: ts->frame, PyFrameObject linked by f_back, f_lasti in code units
  kCFrameInterp,   // 3.11/3.12: ts->cframe->current_frame, _PyInterpreterFrame, prev_instr
  kDirectInterp,   // 3.13+: ts->current_frame, _PyInterpreterFrame, instr_ptr
};

// One row per (minor, free-threaded) build. 0 means "not in this build" for the optional fields.
struct Layout {
  int minor;
  bool free_threaded;
  FrameKind kind;
  // PyObject / PyVarObject / PyTypeObject header (PyObject is 32 bytes in free-threaded builds)
  uint16_t ob_type, ob_size, tp_name, tp_basicsize, tp_itemsize;
  // PyThreadState
  uint16_t ts_interp;
  uint16_t ts_frame;        // 3.10 frame, 3.11/3.12 cframe, 3.13+ current_frame
  uint16_t cframe_current;  // offset of current_frame inside _PyCFrame (3.11/3.12)
  uint16_t ts_base_frame;   // 3.15+: the sentinel frame at the bottom of every thread's chain
  // Frame (PyFrameObject on 3.10, _PyInterpreterFrame on 3.11+)
  uint16_t fr_code;         // f_code / f_executable (a tagged _PyStackRef on 3.14+)
  uint16_t fr_previous;     // f_back / previous
  uint16_t fr_instr;        // f_lasti (int) / prev_instr / instr_ptr (pointers)
  uint16_t fr_owner;        // char owner (3.11+)
  uint16_t fr_trace;        // f_trace (3.10 only: PyFrame_GetLineNumber returns f_lineno then)
  uint16_t fr_tlbc_index;   // int32 tlbc_index: which thread-local bytecode copy (3.14t+)
  uint16_t frame_basicsize; // PyFrame_Type.tp_basicsize expected
  // _PyInterpreterFrame.owner values (3.11+) and the f_executable tags (3.14+)
  uint8_t owner_generator;  // FRAME_OWNED_BY_GENERATOR: always complete
  uint8_t owner_shim;       // lowest owner of a frame without Python code (3.12/3.13 CSTACK,
                            // 3.14+ INTERPRETER; 255: none, 3.11 flags entries with is_entry)
  uint8_t owner_max;        // highest valid owner (3.14: CSTACK 4)
  uint8_t exec_tag_bits;    // Py_TAG_BITS (0 before 3.14: a plain pointer)
  uint8_t exec_tag_ref;     // Py_TAG_REFCNT: the only tag a code reference may carry
  // PyCodeObject
  uint16_t co_name;         // co_qualname on 3.11+, co_name on 3.10
  uint16_t co_firsttraceable;
  uint16_t co_code_adaptive;
  uint16_t co_tlbc;         // _PyCodeArray *co_tlbc (3.14t+): entries[tlbc_index] = a copy
  uint16_t code_basicsize;  // PyCode_Type.tp_basicsize expected
  uint16_t code_itemsize;   // PyCode_Type.tp_itemsize expected
  uint16_t co_filename;
  uint16_t co_firstlineno;
  uint16_t co_linetable;
  // str (PyASCIIObject / PyCompactUnicodeObject)
  uint16_t uni_length;
  uint16_t uni_state;
  uint16_t ascii_size;         // data of a compact ASCII string follows this header
  uint16_t compact_size;       // data of other compact strings follows this header
  uint16_t unicode_basicsize;  // PyUnicode_Type.tp_basicsize expected
  uint8_t state_kind_shift;    // PyASCIIObject.state bitfield positions
  uint8_t state_compact_shift;
  uint8_t state_ascii_shift;
  // bytes
  uint16_t bytes_size;
  uint16_t bytes_sval;
};

// The table (layout_gen.sh output, from the headers of CPython 3.10.13, 3.11.7, 3.12.1, 3.13.0,
// 3.14.10 and 3.15.2). Internal layouts are stable within a minor version for the fields used
// (patch releases append fields): init() re-checks type sizes, and on 3.13+ every offset used
// against _PyRuntime's _Py_DebugOffsets, before trusting a row. constexpr so the walkers compile
// each row's offsets in as immediates. To add a version: run the generator, add its rows here
// and in kDebugLayouts; the walkers are instantiated per row automatically.
inline constexpr Layout kLayouts[] = {
    // minor free_threaded kind
    // ob_type ob_size tp_name tp_basicsize tp_itemsize
    // ts_interp ts_frame cframe_current ts_base_frame
    // fr_code fr_previous fr_instr fr_owner fr_trace fr_tlbc_index frame_basicsize
    // owner_generator owner_shim owner_max exec_tag_bits exec_tag_ref
    // co_name co_firsttraceable co_code_adaptive co_tlbc code_basicsize code_itemsize
    // co_filename co_firstlineno co_linetable
    // uni_length uni_state ascii_size compact_size unicode_basicsize
    // kind_shift compact_shift ascii_shift bytes_size bytes_sval
    // 3.10.13
    {10, false, FrameKind::kFrameObject,
     8, 16, 24, 32, 40,
     16, 24, 0, 0,
     32, 24, 96, 0, 72, 0, 360,
     0, 255, 0, 0, 0,
     112, 0, 0, 0, 176, 0,
     104, 40, 120,
     16, 32, 48, 72, 80,
     2, 5, 6, 16, 32},
    // 3.11.7
    {11, false, FrameKind::kCFrameInterp,
     8, 16, 24, 32, 40,
     16, 56, 8, 0,
     32, 48, 56, 69, 0, 0, 120,
     1, 255, 2, 0, 0,
     128, 168, 184, 0, 184, 2,
     112, 72, 136,
     16, 32, 48, 72, 80,
     2, 5, 6, 16, 32},
    // 3.12.1
    {12, false, FrameKind::kCFrameInterp,
     8, 16, 24, 32, 40,
     16, 56, 0, 0,
     0, 8, 56, 70, 0, 0, 120,
     1, 3, 3, 0, 0,
     128, 176, 192, 0, 192, 2,
     112, 68, 136,
     16, 32, 40, 56, 64,
     2, 5, 6, 16, 32},
    // 3.13.0
    {13, false, FrameKind::kDirectInterp,
     8, 16, 24, 32, 40,
     16, 72, 0, 0,
     0, 8, 56, 70, 0, 0, 136,
     1, 3, 3, 0, 0,
     128, 184, 200, 0, 200, 2,
     112, 68, 136,
     16, 32, 40, 56, 64,
     2, 5, 6, 16, 32},
    // 3.13.0 free-threaded
    {13, true, FrameKind::kDirectInterp,
     24, 32, 40, 48, 56,
     16, 72, 0, 0,
     0, 8, 56, 70, 0, 0, 152,
     1, 3, 3, 0, 0,
     144, 200, 216, 0, 216, 2,
     128, 84, 152,
     32, 48, 56, 72, 80,
     2, 5, 6, 32, 48},
    // 3.14.10
    {14, false, FrameKind::kDirectInterp,
     8, 16, 24, 32, 40,
     16, 72, 0, 0,
     0, 8, 56, 74, 0, 0, 152,
     1, 3, 4, 3, 1,
     128, 192, 208, 0, 208, 2,
     112, 68, 136,
     16, 32, 40, 56, 64,
     2, 5, 6, 16, 32},
    // 3.14.10 free-threaded
    {14, true, FrameKind::kDirectInterp,
     24, 32, 40, 48, 56,
     16, 72, 0, 0,
     0, 8, 56, 78, 0, 72, 168,
     1, 3, 4, 1, 1,
     144, 208, 232, 224, 232, 2,
     128, 84, 152,
     32, 48, 56, 72, 80,
     8, 11, 12, 32, 48},
    // 3.15.2
    {15, false, FrameKind::kDirectInterp,
     8, 16, 24, 32, 40,
     16, 72, 0, 80,
     0, 8, 56, 74, 0, 0, 152,
     1, 3, 3, 3, 1,
     128, 192, 208, 0, 208, 2,
     112, 68, 136,
     16, 32, 40, 56, 64,
     2, 5, 6, 16, 32},
    // 3.15.2 free-threaded
    {15, true, FrameKind::kDirectInterp,
     24, 32, 40, 48, 56,
     16, 72, 0, 80,
     0, 8, 56, 78, 0, 72, 168,
     1, 3, 3, 3, 1,
     144, 208, 232, 224, 232, 2,
     128, 84, 152,
     32, 48, 56, 72, 80,
     8, 11, 12, 32, 48},
};
inline constexpr int kLayoutCount = sizeof kLayouts / sizeof kLayouts[0];

// Where the offsets the walker uses sit inside one minor's _Py_DebugOffsets (the block's own
// layout changes with every minor: 584 bytes in 3.13, 760 in 3.14, 888 in 3.15); 0 = not there.
struct DebugLayout {
  int minor;
  bool free_threaded;
  uint16_t size;
  uint16_t version, free_threaded_flag, ts_interp, ts_current_frame, ts_base_frame;
  uint16_t fr_previous, fr_executable, fr_instr_ptr, fr_owner, fr_tlbc_index;
  uint16_t co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive, co_tlbc;
  uint16_t ob_type, tp_name, bytes_ob_size, bytes_ob_sval;
  uint16_t uni_state, uni_length, uni_ascii_size, uni_compact_size;
};

inline constexpr DebugLayout kDebugLayouts[] = {
    // minor free_threaded size
    // version free_threaded ts.interp ts.current_frame ts.base_frame
    // frame.previous frame.executable frame.instr_ptr frame.owner frame.tlbc_index
    // code.filename code.qualname code.linetable code.firstlineno code.co_code_adaptive code.co_tlbc
    // pyobject.ob_type type.tp_name bytes.ob_size bytes.ob_sval
    // unicode.state unicode.length unicode.asciiobject_size unicode.compactunicodeobject_size
    // _Py_DebugOffsets of 3.13.0: 584 bytes
    {13, false, 584,
     8, 16, 176, 184, 0,
     232, 240, 248, 264, 0,
     280, 296, 304, 312, 344, 0,
     360, 376, 520, 528,
     544, 552, 560, 0},
    // _Py_DebugOffsets of 3.13.0 free-threaded: 584 bytes
    {13, true, 584,
     8, 16, 176, 184, 0,
     232, 240, 248, 264, 0,
     280, 296, 304, 312, 344, 0,
     360, 376, 520, 528,
     544, 552, 560, 0},
    // _Py_DebugOffsets of 3.14.10: 760 bytes
    {14, false, 760,
     8, 16, 200, 208, 0,
     256, 264, 272, 288, 304,
     320, 336, 344, 352, 384, 392,
     408, 424, 600, 608,
     624, 632, 640, 0},
    // _Py_DebugOffsets of 3.14.10 free-threaded: 760 bytes
    {14, true, 760,
     8, 16, 200, 208, 0,
     256, 264, 272, 288, 304,
     320, 336, 344, 352, 384, 392,
     408, 424, 600, 608,
     624, 632, 640, 0},
    // _Py_DebugOffsets of 3.15.2: 888 bytes
    {15, false, 888,
     8, 16, 200, 208, 216,
     320, 328, 336, 352, 368,
     384, 400, 408, 416, 448, 456,
     472, 488, 696, 704,
     720, 728, 736, 744},
    // _Py_DebugOffsets of 3.15.2 free-threaded: 888 bytes
    {15, true, 888,
     8, 16, 200, 208, 216,
     320, 328, 336, 352, 368,
     384, 400, 408, 416, 448, 456,
     472, 488, 696, 704,
     720, 728, 736, 744},
};

// The first fields of every _Py_DebugOffsets (3.13+): cookie, version, free_threaded.
inline constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
inline constexpr uint16_t kDebugVersion = 8, kDebugFreeThreaded = 16;

// The table row for 3.`minor` (free-threaded or not), or null.
constexpr const Layout* layout_for(int minor, bool free_threaded = false) {
  for (const Layout& l : kLayouts)
    if (l.minor == minor && l.free_threaded == free_threaded) return &l;
  return nullptr;
}
constexpr const DebugLayout* debug_layout_for(int minor, bool free_threaded) {
  for (const DebugLayout& d : kDebugLayouts)
    if (d.minor == minor && d.free_threaded == free_threaded) return &d;
  return nullptr;
}
inline constexpr int kNewestMinor = kLayouts[kLayoutCount - 1].minor;
inline constexpr int kFirstDebugOffsetsMinor = 13;

}  // namespace vt::py::detail
