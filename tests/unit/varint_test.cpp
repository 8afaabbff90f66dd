// The varint codec every record uses.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "payload.h"
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

// PayloadReader::varint's inline paths (1 to 4 bytes, then one 8-byte load that may reach past the
// payload into the chunk's readable bytes) and varint_wide must agree with get_varint for every
// length, wherever the payload ends, whatever follows it; a varint cut by the payload's end fails.
TEST_CASE("PayloadReader decodes every varint length wherever the payload and the readable bytes end") {
  std::vector<uint64_t> values;
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t v = bits == 64 ? ~0ull : (uint64_t(1) << bits);
    values.push_back(v);
    values.push_back(v - 1);
    values.push_back(v | 0x55);
  }
  for (uint8_t filler : {uint8_t(0x00), uint8_t(0x80), uint8_t(0xff)}) {
    for (uint64_t v : values) {
      for (size_t slack = 0; slack <= 10; ++slack) {
        uint8_t buf[32];
        memset(buf, filler, sizeof buf);
        buf[0] = 0x7f;  // a one-byte field before it: the varint starts unaligned
        uint8_t* end = put_varint(buf + 1, v);
        const size_t n = size_t(end - buf);
        for (bool wide : {false, true}) {
          PayloadReader r(buf, n, end + slack);
          CHECK(r.varint() == 0x7f);
          CHECK((wide ? r.varint_wide() : r.varint()) == v);
          CHECK(r.ok());
          CHECK(r.pos() == end);
          // The same varint cut one byte short by the payload's end (the bytes after it readable).
          if (n > 2) {
            PayloadReader cut(buf, n - 1, end + slack);
            cut.varint();
            CHECK((wide ? cut.varint_wide() : cut.varint()) == 0);
            CHECK_FALSE(cut.ok());
          }
        }
      }
    }
  }
}
