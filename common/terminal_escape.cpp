// See terminal_escape.h.
#include "terminal_escape.h"

#include "utf8.h"

#include <cstdint>
#include <cstdio>

namespace vt::analyzer {

namespace {


bool invisible_control(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

std::string terminal_escape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  char buf[16];
  for (size_t i = 0; i < raw.size();) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = c < 0x80 ? 0 : utf8_at(raw, i, &cp);
    if (n == 0) {  // C0 control, DEL, or a byte that does not start valid UTF-8
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else if (invisible_control(cp)) {
      snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
      out += buf;
      i += n;
    } else {
      out.append(raw.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string json_text(const nlohmann::json& j, int indent) {
  std::string s = j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  // Outside strings JSON is ASCII punctuation, digits and literals: every byte >= 0x7f is inside
  // a string, where a \u escape means the same code point.
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x7f) {
      out += char(c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t n = c == 0x7f ? 1 : utf8_at(s, i, &cp);
    if (c == 0x7f) cp = 0x7f;
    if (n == 0) {  // not produced by dump with the replace handler; keep the byte
      out += char(c);
      ++i;
    } else if (cp == 0x7f || invisible_control(cp)) {
      snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
      out += buf;
      i += n;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace vt::analyzer
