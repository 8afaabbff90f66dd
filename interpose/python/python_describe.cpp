// Owns describe_code(): copies a live code object's filename, qualified name, first line and raw
// line table into caller buffers by reading the objects directly (no GIL, no allocation, no
// interpreter calls). Strings: compact str objects only (code-object strings always are); their
// latin-1 / UCS-2 / UCS-4 payload is encoded to UTF-8 here rather than trusting the optional
// cached utf8 pointer, which another thread may be filling in.
#include "python_frames.h"
#include "python_state.h"

namespace vt::py {
using namespace detail;
namespace {

// Appends code point `cp` as UTF-8 if it fits before the terminating NUL.
bool put_utf8(char* out, size_t cap, size_t* o, uint32_t cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) {
    b[0] = static_cast<char>(cp), n = 1;
  } else if (cp < 0x800) {
    b[0] = static_cast<char>(0xC0 | (cp >> 6)), b[1] = static_cast<char>(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    b[0] = static_cast<char>(0xE0 | (cp >> 12)), b[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    b[2] = static_cast<char>(0x80 | (cp & 0x3F)), n = 3;
  } else if (cp < 0x110000) {
    b[0] = static_cast<char>(0xF0 | (cp >> 18)), b[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    b[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), b[3] = static_cast<char>(0x80 | (cp & 0x3F)), n = 4;
  } else {
    b[0] = '?', n = 1;
  }
  if (*o + n >= cap) return false;
  for (size_t i = 0; i < n; ++i) out[(*o)++] = b[i];
  return true;
}

// str object at `s` -> NUL-terminated UTF-8 in out[cap]. False if `s` is not a compact str.
bool copy_str(const Runtime* rt, uintptr_t s, char* out, size_t cap, bool* truncated) {
  const Layout& L = *rt->L;
  out[0] = '\0';
  if (!ptr_ok(s) || ld<uintptr_t>(s + L.ob_type) != rt->unicode_type) return false;
  uint32_t st = ld<uint32_t>(s + L.uni_state);
  uint32_t kind = (st >> L.state_kind_shift) & 7;
  bool compact = (st >> L.state_compact_shift) & 1, ascii = (st >> L.state_ascii_shift) & 1;
  int64_t len = ld<int64_t>(s + L.uni_length);
  if (!compact || len < 0 || len > (1 << 24) || (kind != 1 && kind != 2 && kind != 4)) return false;
  uintptr_t data = s + (ascii ? L.ascii_size : L.compact_size);
  size_t o = 0;
  if (ascii) {
    size_t n = static_cast<size_t>(len) < cap - 1 ? static_cast<size_t>(len) : cap - 1;
    std::memcpy(out, reinterpret_cast<const void*>(data), n);
    o = n;
    if (n < static_cast<size_t>(len)) *truncated = true;
  } else {
    for (int64_t i = 0; i < len; ++i) {
      uint32_t cp = kind == 1   ? ld<uint8_t>(data + i)
                    : kind == 2 ? ld<uint16_t>(data + 2 * i)
                                : ld<uint32_t>(data + 4 * i);
      if (!put_utf8(out, cap, &o, cp)) {
        *truncated = true;
        break;
      }
    }
  }
  out[o] = '\0';
  return true;
}

}  // namespace

bool describe_code(uint64_t code_addr, CodeInfo* out) {
  const Runtime* rt = accepted();  // (the self-check of a newer minor describes before frames start)
  if (!rt || !out) return false;
  const Layout& L = *rt->L;
  uintptr_t code = static_cast<uintptr_t>(code_addr);
  out->truncated = false;
  out->linetable_len = 0;
  out->py_minor = rt->minor;
  if (!ptr_ok(code) || ld<uintptr_t>(code + L.ob_type) != rt->code_type) return false;
  if (!copy_str(rt, ld<uintptr_t>(code + L.co_filename), out->filename, sizeof out->filename, &out->truncated))
    return false;
  if (!copy_str(rt, ld<uintptr_t>(code + L.co_name), out->qualname, sizeof out->qualname, &out->truncated))
    return false;
  out->firstlineno = ld<int>(code + L.co_firstlineno);
  uintptr_t lt = ld<uintptr_t>(code + L.co_linetable);
  if (!ptr_ok(lt) || ld<uintptr_t>(lt + L.ob_type) != rt->bytes_type) return false;
  int64_t n = ld<int64_t>(lt + L.bytes_size);
  if (n < 0 || n > (1 << 28)) return false;
  if (n > static_cast<int64_t>(sizeof out->linetable)) {
    n = sizeof out->linetable;
    out->truncated = true;
  }
  std::memcpy(out->linetable, reinterpret_cast<const void*>(lt + L.bytes_sval), static_cast<size_t>(n));
  out->linetable_len = static_cast<uint32_t>(n);
  return true;
}

}  // namespace vt::py
