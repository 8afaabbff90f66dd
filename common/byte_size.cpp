// See byte_size.h. Integer arithmetic throughout, so the rounding is exact and the same in the
// JavaScript and Python versions of these rules.
#include "byte_size.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace vt {

std::string format_bytes(uint64_t b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (b < 1024) return std::to_string(b) + " B";
  int u = 1;
  while (u < 5 && b >> (10 * (u + 1)) != 0) ++u;
  const unsigned __int128 div = (unsigned __int128)1 << (10 * u);
  int decimals = b >= 100 * div ? 0 : b >= 10 * div ? 1 : 2;
  unsigned __int128 scale = decimals == 0 ? 1 : decimals == 1 ? 10 : 100;
  unsigned __int128 num = (unsigned __int128)b * scale;
  unsigned __int128 q = num / div, r = num % div;
  if (2 * r > div || (2 * r == div && (q & 1))) ++q;  // half to even
  std::string whole = std::to_string(uint64_t(q / scale));
  if (decimals) {
    std::string frac = std::to_string(uint64_t(q % scale));
    whole += "." + std::string(size_t(decimals) - frac.size(), '0') + frac;
  }
  return whole + " " + kUnits[u];
}

bool parse_bytes(const std::string& text, uint64_t* bytes, std::string* why) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, n = text.size();
  while (i < n && space(text[i])) ++i;
  // The number: digits, or digits, a point and digits, or a point and digits (no sign, no
  // exponent, no hex: strtod alone would take "-1", "1e3", "0x10" and "inf").
  size_t num = i, int_digits = 0, frac_digits = 0;
  while (i < n && digit(text[i])) ++i, ++int_digits;
  bool point = i < n && text[i] == '.';
  if (point) {
    ++i;
    while (i < n && digit(text[i])) ++i, ++frac_digits;
  }
  if (point ? frac_digits == 0 : int_digits == 0) {
    *why = "'" + text + "' is not a size (examples: 512MiB, 4GB, 1.5GiB, 1048576)";
    return false;
  }
  double v = strtod(text.substr(num, i - num).c_str(), nullptr);
  while (i < n && space(text[i])) ++i;
  std::string unit;
  while (i < n && std::isalpha(static_cast<unsigned char>(text[i])))
    unit += char(std::tolower(static_cast<unsigned char>(text[i++])));
  while (i < n && space(text[i])) ++i;
  static const struct {
    const char* name;
    double factor;
  } kUnits[] = {{"", 1},
                {"b", 1},
                {"k", 1024.0},
                {"kib", 1024.0},
                {"m", 1048576.0},
                {"mib", 1048576.0},
                {"g", 1073741824.0},
                {"gib", 1073741824.0},
                {"t", 1099511627776.0},
                {"tib", 1099511627776.0},
                {"kb", 1e3},
                {"mb", 1e6},
                {"gb", 1e9},
                {"tb", 1e12}};
  const auto* it = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return unit == u.name; });
  if (i < n || it == std::end(kUnits)) {
    *why = "'" + text + "' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)";
    return false;
  }
  if (it->factor == 1 && frac_digits && v != std::floor(v)) {
    *why = "'" + text + "' is a fraction of a byte";
    return false;
  }
  double b = std::nearbyint(v * it->factor);  // to the nearest byte, half to even
  if (b >= 18446744073709551616.0) {
    *why = "'" + text + "' is too large";
    return false;
  }
  *bytes = uint64_t(b);
  return true;
}

}  // namespace vt
