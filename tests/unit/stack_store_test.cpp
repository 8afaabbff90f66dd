// The analyzer's flat stores keyed by stack id (analyzer/read/stack_frames.h, SiteTable in
// live_state.h) and the wide varint read the stack records use (format/payload.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "live_state.h"
#include "payload.h"
#include "stack_frames.h"

using vt::analyzer::SiteKey;
using vt::analyzer::SiteTable;
using vt::analyzer::StackFrames;

TEST_CASE("varint_wide reads every length as varint() does, at the end of a payload too") {
  std::vector<uint64_t> values = {0, 1, 127, 128, 16383, 16384, (1ull << 35) + 5, (1ull << 47) - 3, (1ull << 49) + 7,
                                  (1ull << 55) + 1, (1ull << 56) - 1, 1ull << 56, (1ull << 63) + 9, ~0ull};
  for (uint64_t v = 1; v; v <<= 1) values.push_back(v - 1);
  std::vector<uint8_t> buf;
  for (uint64_t v : values) {
    uint8_t tmp[vt::format::kMaxVarint];
    uint8_t* end = vt::format::put_varint(tmp, v);
    buf.insert(buf.end(), tmp, end);
  }
  vt::format::PayloadReader r(buf.data(), buf.size());
  for (uint64_t v : values) CHECK(r.varint_wide() == v);
  CHECK(r.ok());
  CHECK(r.at_end());
  // Cut short: the last value's bytes are missing.
  vt::format::PayloadReader cut(buf.data(), buf.size() - 1);
  for (size_t i = 0; i + 1 < values.size(); ++i) CHECK(cut.varint_wide() == values[i]);
  cut.varint_wide();
  CHECK_FALSE(cut.ok());
}

TEST_CASE("StackFrames keeps the first record of an id, dense and sparse ids alike") {
  StackFrames s;
  std::map<uint32_t, std::vector<uint64_t>> want;
  for (uint32_t id = 1; id <= 20000; ++id) {
    std::vector<uint64_t> f(id % 40);  // some empty, some across block ends
    for (size_t i = 0; i < f.size(); ++i) f[i] = uint64_t(id) * 1000 + i;
    CHECK(s.add(id, f.data(), uint32_t(f.size())));
    want[id] = f;
  }
  const uint32_t hostile[] = {0xffffffffu, 0x80000000u, 5000000u};
  for (uint32_t id : hostile) {
    uint64_t f[3] = {id, 2, 3};
    CHECK(s.add(id, f, 3));
    want[id] = {id, 2, 3};
  }
  uint64_t again[1] = {42};
  CHECK_FALSE(s.add(7, again, 1));  // the first record wins
  CHECK_FALSE(s.add(0xffffffffu, again, 1));
  CHECK(s.size() == want.size());
  for (const auto& [id, f] : want) {
    StackFrames::Frames got;
    REQUIRE(s.find(id, &got));
    CHECK(std::vector<uint64_t>(got.begin(), got.end()) == f);
  }
  StackFrames::Frames none;
  CHECK_FALSE(s.find(0, &none));
  CHECK_FALSE(s.find(20001, &none));
  CHECK_FALSE(s.contains(0xfffffffeu));
  size_t seen = 0;
  s.for_each([&](uint32_t id, const StackFrames::Frames& f) {
    ++seen;
    CHECK(std::vector<uint64_t>(f.begin(), f.end()) == want[id]);
  });
  CHECK(seen == want.size());
  // A hostile id must not size the dense index (8 bytes per id up to 2^32 would be 32 GiB).
  CHECK(s.bytes() < (size_t(64) << 20));
  // begin_add without commit keeps nothing.
  uint64_t* room = s.begin_add(30000, 4);
  REQUIRE(room);
  CHECK_FALSE(s.contains(30000));
  CHECK(s.begin_add(30000, StackFrames::kMaxFrames + 1) == nullptr);
}

TEST_CASE("SiteTable finds each (stack, device, bucket) row again, dense and sparse stacks alike") {
  SiteTable t;
  std::map<std::tuple<uint32_t, int32_t, int>, uint32_t> rows;
  const uint32_t stacks[] = {1, 2, 3, 100, 0xffffffffu, 0x7fffffffu, 4};
  for (int round = 0; round < 2; ++round)
    for (uint32_t st : stacks)
      for (int32_t dev : {-1, 0, 3})
        for (vt::Bucket b : {vt::Bucket::Device, vt::Bucket::PinnedHost}) {
          uint32_t r = t.row(SiteKey{st, dev, b});
          auto key = std::make_tuple(st, dev, int(b));
          if (round == 0) {
            CHECK(rows.count(key) == 0);
            rows[key] = r;
            t.at(r).bytes = r + 1;
          } else {
            CHECK(rows[key] == r);  // found, not added again
          }
          const vt::analyzer::SiteBytes* found = t.find(SiteKey{st, dev, b});
          REQUIRE(found);
          CHECK(found->bytes == r + 1);
        }
  CHECK(t.rows().size() == rows.size());
  CHECK(t.find(SiteKey{5, 0, vt::Bucket::Device}) == nullptr);
  CHECK(t.find(SiteKey{1, 7, vt::Bucket::Device}) == nullptr);
}

TEST_CASE("StackFrames keeps deltas as changes and gives every stack back whole") {
  // A chain of deltas longer than kMaxChain (so some are kept whole), each changing the middle
  // frames of the one before it, with ids dense and sparse; every stack reads back whole, from the
  // recently added ones and, once they have passed, rebuilt from its chain.
  StackFrames s;
  std::map<uint32_t, std::vector<uint64_t>> want;
  std::vector<uint64_t> cur(24);
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = 0x400000 + i * 64;
  REQUIRE(s.add(1, cur.data(), uint32_t(cur.size())));
  want[1] = cur;
  uint32_t prev = 1;
  for (uint32_t k = 2; k <= 3000; ++k) {
    uint32_t id = k % 500 == 0 ? 0x80000000u + k : k;  // now and then a sparse id
    std::vector<uint64_t> next = cur;
    uint32_t inner = k % 5, outer = std::min<uint32_t>(8 + k % 3, uint32_t(cur.size()) - inner);  // no overlap
    next.resize(inner);
    for (uint32_t j = 0; j < 1 + k % 4; ++j) next.push_back(0x900000 + k * 16 + j);  // the changed middle
    next.insert(next.end(), cur.end() - outer, cur.end());
    REQUIRE(s.add_delta(id, prev, inner, outer, next.data(), uint32_t(next.size())));
    CHECK_FALSE(s.add_delta(id, prev, inner, outer, next.data(), uint32_t(next.size())));  // known: refused
    want[id] = next;
    cur = next;
    prev = id;
  }
  CHECK_FALSE(s.add_delta(5000, 4999, 0, 0, cur.data(), uint32_t(cur.size())));  // unknown base
  CHECK(s.size() == want.size());
  for (const auto& [id, frames] : want) {
    StackFrames::Frames f;
    REQUIRE(s.find(id, &f));
    REQUIRE(std::vector<uint64_t>(f.begin(), f.end()) == frames);
  }
  size_t seen = 0;
  s.for_each([&](uint32_t id, const StackFrames::Frames& f) {
    ++seen;
    CHECK(std::vector<uint64_t>(f.begin(), f.end()) == want[id]);
  });
  CHECK(seen == want.size());
  // Kept as changes: one header word and 1-4 new frames per delta, a whole stack every
  // kMaxChain, against 13-17 frames each when whole.
  StackFrames whole;
  for (const auto& [id, frames] : want) whole.add(id, frames.data(), uint32_t(frames.size()));
  INFO("arena words: deltas " << s.arena_words() << ", whole " << whole.arena_words());
  CHECK(s.arena_words() * 2 < whole.arena_words());  // 14,063 against 39,964 words
}
