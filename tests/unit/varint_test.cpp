// The varint codec every record uses.
#include <catch2/catch.hpp>

#include "trace_format.h"

using namespace vt::format;

TEST_CASE("varints round-trip at every length and reject cut-off input") {
  const uint64_t values[] = {0, 1, 127, 128, 300, 16383, 16384, (1ull << 35) + 5, ~0ull};
  for (uint64_t v : values) {
    uint8_t buf[kMaxVarint];
    uint8_t* end = put_varint(buf, v);
    uint64_t back = 0;
    REQUIRE(get_varint(buf, end, &back) == end);
    CHECK(back == v);
    if (end - buf > 1) CHECK(get_varint(buf, end - 1, &back) == nullptr);
  }
}

TEST_CASE("zigzag maps small signed deltas to small unsigned values") {
  CHECK(zigzag(0) == 0);
  CHECK(zigzag(-1) == 1);
  CHECK(zigzag(1) == 2);
  for (int64_t v : {int64_t(-5), int64_t(123456789), INT64_MIN, INT64_MAX}) CHECK(unzigzag(zigzag(v)) == v);
}

TEST_CASE("an over-long varint is rejected") {
  uint8_t buf[12];
  for (uint8_t& b : buf) b = 0x80;
  uint64_t v;
  CHECK(get_varint(buf, buf + sizeof buf, &v) == nullptr);
}
