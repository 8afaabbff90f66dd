// json_string's shortcut for plain text spells every string exactly as json_text does.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "terminal_escape.h"

using vt::analyzer::json_string;
using vt::analyzer::json_text;

TEST_CASE("json_string spells every string as json_text does, plain text and escapes alike") {
  auto same = [](const std::string& s) {
    INFO("string of " << s.size() << " bytes");
    REQUIRE(json_string(s) == json_text(nlohmann::json(s)));
  };
  same("");
  same("cuMemAlloc_v2 1.00 GiB");
  for (int c = 0; c < 256; ++c) {  // every byte alone, and between plain text
    same(std::string(1, char(c)));
    same("a" + std::string(1, char(c)) + "b");
  }
  same("caf\xc3\xa9 \xe2\x80\x8b zero-width, \x1b[31m red, \xff\xfe invalid");
  std::mt19937 rng(7);
  const std::string alphabet = std::string("abcXYZ019 _./:-\"\\\x01\x1f\x7f\t\n") + std::string(1, '\0') + "\xc3\xa9\xe2\x80\x8b\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    for (int n = int(rng() % 24); n > 0; --n) s += alphabet[rng() % alphabet.size()];
    same(s);
  }
}
