// Python line numbers from a python-code record (kTagPyCode): turns a code object's raw line
// table (copied once per code object by vt::py::describe_code in the traced process) and a
// frame's instruction byte offset
// (vt::py::RawFrame::instr) into a source line, exactly as CPython's PyCode_Addr2Line would,
// without any Python. Formats: 3.10 PEP 626 co_linetable; 3.11+ location table. Used by the
// reader's symbolizer and by the walker's self-check in the traced process (no allocation).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt::format {

// Line of the instruction at byte offset `instr` (kInstrNotStarted = 0xFFFFFFFF -> firstlineno).
// Returns -1 when the instruction has no line (artificial instructions) or lies past the end of
// the table (e.g. a table truncated by describe_code), or for an unknown py_minor.
int python_line(int py_minor, const uint8_t* linetable, size_t len, int firstlineno, uint32_t instr);

}  // namespace vt::format
