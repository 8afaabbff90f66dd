// UTF-8, one rule for every output that must be valid UTF-8: the terminal's escapes
// (terminal_escape.h), the HTML page's strings (report_html.cpp) and the pickle's (pickle_writer.h).
// Strings from a trace are bytes the traced process wrote: never trusted to be UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vt::analyzer {

// Length of the valid UTF-8 sequence at s[i] and its code point; 0 when it is not one
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
inline size_t utf8_at(std::string_view s, size_t i, uint32_t* cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    v = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    v = v << 6 | (b(i + k) & 0x3f);
  }
  if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

// `s` with every byte of an invalid sequence replaced by U+FFFD (s itself when it is valid).
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  uint32_t cp;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = utf8_at(s, i, &cp);
    if (!n) break;
    i += n;
  }
  if (i == s.size()) return std::string(s);
  out.reserve(s.size() + 8);
  out.append(s.data(), i);
  while (i < s.size()) {
    size_t n = utf8_at(s, i, &cp);
    if (n) out.append(s.data() + i, n), i += n;
    else out += "\xef\xbf\xbd", ++i;
  }
  return out;
}

}  // namespace vt::analyzer
