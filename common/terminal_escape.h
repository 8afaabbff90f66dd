// The one rule for putting a string that came from outside (a trace, NVML, the environment, a
// file name) on a terminal or into a line-oriented text format: control characters, C1
// controls, bidirectional overrides, line separators and bytes that are not UTF-8 are written
// as visible escapes, so such a string can neither move the cursor, recolour, retitle or clear
// the terminal, nor forge a line of its own. Every text writer (reports, diff, check, top, info,
// doctor, error lines, folded stacks) passes such strings through it, and json_text() gives JSON
// the same protection; HTML has its own escaping (docs/security.md, "Escaping").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vt::analyzer {

// Printable ASCII and valid UTF-8 text stay as they are. \n \r \t become the two characters
// "\n" "\r" "\t"; other C0 controls, DEL and every byte of an invalid UTF-8 sequence become
// "\xNN"; C1 controls (U+0080-U+009F), bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069) and U+2028/U+2029 become "\uNNNN".
std::string terminal_escape(std::string_view raw);

// JSON text for stdout or a file: `j` serialized (indent as nlohmann's dump; invalid UTF-8
// replaced by U+FFFD, never an exception), with the code points a terminal acts on that JSON
// leaves raw (DEL, C1 controls, bidi controls, U+2028/U+2029) written as \uNNNN escapes. The
// parsed value is the same; only its spelling changes. Every JSON the CLI prints goes through it.
std::string json_text(const nlohmann::json& j, int indent = -1);
// One string as a JSON string literal, spelled as json_text spells it (for JSON written by hand:
// the Perfetto export).
// Printable ASCII without a quote or a backslash (the names of most exported events) is its own
// spelling: quoted directly, without building a json value (issue 43: a third of the Perfetto
// export's cost per drawn allocation). json_string_test checks the two give the same.
inline std::string json_string(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') return json_text(nlohmann::json(s));
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

}  // namespace vt::analyzer
