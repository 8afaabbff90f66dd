// The CLI's byte sizes (common/byte_size.h) on the shared cases (tests/shared/byte_sizes.json),
// which the HTML page (format.js) and the pytest plugin (sizes.py) pass too: one set of rules.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "byte_size.h"

namespace {
nlohmann::json shared_cases() {
  std::ifstream in(VT_SOURCE_DIR "/tests/shared/byte_sizes.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}
}  // namespace

TEST_CASE("byte sizes: the shared cases, written") {
  nlohmann::json cases = shared_cases();
  REQUIRE(cases["format"].size() >= 10);
  for (const auto& c : cases["format"]) {
    uint64_t b = std::stoull(c[0].get<std::string>());
    INFO("bytes " << b);
    CHECK(vt::format_bytes(b) == c[1].get<std::string>());
  }
}

TEST_CASE("byte sizes: the shared cases, read") {
  nlohmann::json cases = shared_cases();
  REQUIRE(cases["parse"].size() >= 10);
  for (const auto& c : cases["parse"]) {
    std::string text = c[0].get<std::string>();
    INFO("'" << text << "'");
    uint64_t b = 0;
    std::string why;
    bool ok = vt::parse_bytes(text, &b, &why);
    if (c[1].is_null()) {
      CHECK_FALSE(ok);
      CHECK(why.find("'" + text + "'") == 0);  // one sentence naming the value
    } else {
      REQUIRE(ok);
      CHECK(b == std::stoull(c[1].get<std::string>()));
    }
  }
}

TEST_CASE("byte sizes: refusals say why") {
  uint64_t b = 0;
  std::string why;
  CHECK_FALSE(vt::parse_bytes("12 parsecs", &b, &why));
  CHECK(why == "'12 parsecs' has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)");
  CHECK_FALSE(vt::parse_bytes("0.5", &b, &why));
  CHECK(why == "'0.5' is a fraction of a byte");
  CHECK_FALSE(vt::parse_bytes("16777216 TiB", &b, &why));
  CHECK(why == "'16777216 TiB' is too large");
  CHECK_FALSE(vt::parse_bytes("-1GiB", &b, &why));
  CHECK(why == "'-1GiB' is not a size (examples: 512MiB, 4GB, 1.5GiB, 1048576)");
}
