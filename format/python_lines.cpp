// Decoders for CPython's line tables (Objects/codeobject.c, Objects/lnotab_notes.txt,
// Objects/locations.md), reimplemented to run offline on copied bytes. Both walk address ranges
// [start, end) in bytes from offset 0, accumulating a line delta, and stop at the range holding
// `instr`, mirroring _PyCode_CheckLineNumber's forward scan.
#include "python_lines.h"

#include <climits>

namespace vt::format {
namespace {

int clamp_line(int64_t line) { return line < 0 || line > INT_MAX ? -1 : int(line); }

// 3.10 (PEP 626): pairs (unsigned byte: address delta in bytes, signed byte: line delta);
// a line delta of -128 means "no line" for that range. Zero-length ranges only carry line deltas.
int line_310(const uint8_t* t, size_t len, int firstlineno, uint32_t instr) {
  int64_t line = firstlineno;  // a corrupt table can run past INT_MAX
  uint64_t end = 0;
  for (size_t i = 0; i + 1 < len; i += 2) {
    uint64_t start = end;
    end += t[i];
    int8_t ldelta = static_cast<int8_t>(t[i + 1]);
    bool no_line = ldelta == -128;
    if (!no_line) line += ldelta;
    if (end > start && instr < end) return no_line ? -1 : clamp_line(line);
  }
  return -1;
}

// Location-table varints: 6-bit little-endian chunks, 0x40 = more follows.
uint32_t read_varint(const uint8_t* t, size_t len, size_t* i) {
  uint32_t v = 0;
  for (unsigned shift = 0; *i < len && shift < 32; shift += 6) {
    uint8_t b = t[(*i)++];
    v |= static_cast<uint32_t>(b & 63) << shift;
    if (!(b & 64)) break;
  }
  return v;
}

int read_svarint(const uint8_t* t, size_t len, size_t* i) {
  uint32_t u = read_varint(t, len, i);
  return (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
}

// 3.11+: entries start with a byte 1cccclll: code c (0-9 short form, 10-12 one-line form with
// line delta c-10, 13 no columns, 14 long form, 15 no location) covering l+1 code units.
// Codes 13 and 14 start with a signed varint line delta; the rest of an entry (columns, end
// line) does not affect the start line and is skipped up to the next byte with the top bit set.
int line_311(const uint8_t* t, size_t len, int firstlineno, uint32_t instr) {
  int64_t line = firstlineno;  // a corrupt table can run past INT_MAX
  uint64_t end = 0;
  size_t i = 0;
  while (i < len) {
    uint8_t head = t[i++];
    if (!(head & 0x80)) return -1;  // not at an entry start: corrupt table
    int code = (head >> 3) & 15;
    uint64_t start = end;
    end += ((head & 7) + 1) * 2;
    if (code == 13 || code == 14) line += read_svarint(t, len, &i);
    else if (code >= 10 && code <= 12) line += code - 10;
    while (i < len && !(t[i] & 0x80)) ++i;
    if (instr >= start && instr < end) return code == 15 ? -1 : clamp_line(line);
  }
  return -1;
}

}  // namespace

int python_line(int py_minor, const uint8_t* linetable, size_t len, int firstlineno, uint32_t instr) {
  if (instr == 0xFFFFFFFFu) return firstlineno;  // PyCode_Addr2Line(co, addrq < 0)
  if (!linetable && len) return -1;
  if (py_minor == 10) return line_310(linetable, len, firstlineno, instr);
  if (py_minor >= 11) return line_311(linetable, len, firstlineno, instr);  // unchanged through 3.15
  return -1;
}

}  // namespace vt::format
