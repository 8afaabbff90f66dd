// Byte counts for people, written and read one way everywhere: the text, HTML and Perfetto
// reports, `vramtrace check`/`diff`/`top`/`doctor`, the HTML page (analyzer/html/format.js) and
// the pytest plugin (pytest_plugin/) follow the same rules, proven on the same cases by
// tests/shared/byte_sizes.json (C++, JavaScript and Python tests read it).
//
// Writing: below 1 KiB, "N B"; else the largest binary unit (KiB ... PiB) the count reaches, with
// three significant digits: "1.50 GiB", "12.0 KiB", "512 MiB" (two decimals below 10, one below
// 100, none from 100 on; decided on the exact value, rounded half to even on the exact value).
//
// Reading: a number (decimals allowed), optional spaces, a unit: none or B (bytes), K/KiB, M/MiB,
// G/GiB, T/TiB (powers of 1024), KB/MB/GB/TB (powers of 1000), any case. "512MiB", "4GB",
// "1.5 GiB", "1048576".
#pragma once

#include <cstdint>
#include <string>

namespace vt {

std::string format_bytes(uint64_t bytes);

// False with one sentence in *why ("'2 GB/s' has an unknown unit ...") for anything else, a
// fraction of a byte, or a size that does not fit 64 bits. Sizes are read as doubles (the same
// rule as the HTML page's and the pytest plugin's parsers, tests/shared/byte_sizes.json): exact up
// to 2^53 bytes (8 PiB), rounded to the nearest byte above, so 2^64 - 1 itself rounds to 2^64
// and is refused; with a unit, a fraction of it is rounded to the nearest byte.
bool parse_bytes(const std::string& text, uint64_t* bytes, std::string* why);

}  // namespace vt
