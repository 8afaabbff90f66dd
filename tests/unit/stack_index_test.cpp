// The recorder's stack index (interpose/stacks/stack_index.cpp) against the analyzer's decoder
// (analyzer/read/trace_reader.cpp, decode_stack_meta): every stack it writes, whole or as a delta of
// the thread's previous one, reads back frame for frame, in the file's order and out of it; a
// delta whose base is missing is dropped, never misread; the table keeps deduplicating past its
// first level; a fork's child starts with whole records. The recorder's writer is replaced by
// the stubs below, which keep the records in memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "meta_records.h"
#include "stack_index.h"
#include "trace_reader.h"

namespace fmt = vt::format;
using vt::analyzer::Record;
using vt::analyzer::StackFrames;
using vt::analyzer::StackStore;

namespace {

struct Written {
  uint8_t tag;
  std::string payload;
};
std::vector<Written> g_written;
bool g_keep = true;  // false: count only (the growth test writes millions)
size_t g_count = 0;

}  // namespace

namespace vt {
bool write_meta(uint8_t tag, const uint8_t* payload, size_t len, uint64_t) {
  ++g_count;
  if (g_keep) g_written.push_back({tag, std::string(reinterpret_cast<const char*>(payload), len)});
  return true;
}
void ensure_modules(const uint64_t*, int, uint64_t) {}
}  // namespace vt

namespace {

int identity(const uint64_t* key, int n, uint64_t* out, uint64_t) {
  memcpy(out, key, size_t(n) * sizeof *key);
  return n;
}

bool decode(const Written& w, StackStore* store) {
  Record r;
  r.tag = w.tag;
  r.payload = reinterpret_cast<const uint8_t*>(w.payload.data());
  r.payload_len = w.payload.size();
  return vt::analyzer::decode_stack_meta(r, store);
}

std::vector<uint64_t> frames_of(const StackStore& s, uint32_t id) {
  StackFrames::Frames f;
  if (!s.stacks.find(id, &f)) return {};
  return std::vector<uint64_t>(f.begin(), f.end());
}

// Stacks like a training loop's: shared allocator frames inside, a call tree whose inner levels
// change fastest, Python frames outside; every few a stack of another length, a wholly different
// one, and repeats of earlier ones (which the index answers without a record).
std::vector<std::vector<uint64_t>> training_like_stacks(size_t count) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> out;
  for (size_t i = 0; i < count; ++i) {
    std::vector<uint64_t> s;
    for (int k = 0; k < 5; ++k) s.push_back(0x7f1200001000ull + uint64_t(k) * 0x340);  // the allocator
    int depth = 6 + int(i % 7 == 0 ? rng() % 12 : 9);
    for (int level = 0; level < depth; ++level) {
      uint64_t node = level * 2 < 64 ? i >> (2 * level) : 0;
      s.push_back(0x55aa00000000ull + (node % 4) * 0x90 + uint64_t(level) * 0x10000);
    }
    for (int k = 0; k < 4; ++k) s.push_back(fmt::python_frame(uint32_t(10 + k), uint32_t(2 * k + (i >> 12) % 3), k == 0));
    if (i % 97 == 0)
      for (uint64_t& f : s) f = rng() & 0x7fffffffffffull;  // nothing shared with the previous one
    out.push_back(std::move(s));
  }
  for (size_t i = 0; i < count; i += 13) out.push_back(out[i]);
  return out;
}

}  // namespace

TEST_CASE("stack index: every stack reads back exactly, deltas and whole records alike") {
  vt::forget_stacks();
  g_written.clear();
  g_keep = true;
  auto stacks = training_like_stacks(20000);
  std::vector<uint32_t> ids;
  for (const auto& s : stacks) ids.push_back(vt::intern_stack(s.data(), int(s.size()), 0, identity));

  size_t deltas = 0, bytes = 0;
  for (const Written& w : g_written) {
    deltas += w.tag == fmt::kTagStackDelta;
    bytes += w.payload.size() + 3;  // tag, length, dt: as in a trace
  }
  INFO("records " << g_written.size() << ", deltas " << deltas << ", bytes " << bytes);
  CHECK(g_written.size() == 20000);  // the repeats were found
  CHECK(deltas > 19000);
  // Whole, these stacks take ~150 B each; as deltas of the previous one a few bytes per new frame.
  CHECK(double(bytes) / double(g_written.size()) < 24.0);

  SECTION("in the order written") {
    StackStore store;
    for (const Written& w : g_written) REQUIRE(decode(w, &store));
    CHECK(vt::analyzer::resolve_stack_deltas(&store));
    for (size_t i = 0; i < stacks.size(); ++i) REQUIRE(frames_of(store, ids[i]) == stacks[i]);
  }
  SECTION("in reverse: every delta waits for its base") {
    StackStore store;
    for (size_t i = g_written.size(); i-- > 0;) REQUIRE(decode(g_written[i], &store));
    CHECK(!store.pending_deltas.empty());
    CHECK(vt::analyzer::resolve_stack_deltas(&store));
    CHECK(store.pending_deltas.empty());
    for (size_t i = 0; i < stacks.size(); ++i) REQUIRE(frames_of(store, ids[i]) == stacks[i]);
  }
  SECTION("a lost base: its deltas are dropped, the others read back") {
    StackStore store;
    size_t lost = 1000;  // a record in the middle of a run of deltas
    REQUIRE(g_written[lost + 1].tag == fmt::kTagStackDelta);
    for (size_t i = 0; i < g_written.size(); ++i)
      if (i != lost) REQUIRE(decode(g_written[i], &store));
    CHECK(!vt::analyzer::resolve_stack_deltas(&store));
    CHECK(frames_of(store, ids[lost + 1]).empty());
    size_t intact = 0;
    for (size_t i = 0; i < 20000; ++i) {
      auto f = frames_of(store, ids[i]);
      if (f.empty()) continue;
      REQUIRE(f == stacks[i]);
      ++intact;
    }
    // Up to the next whole record (every 97th stack) the chain is gone; the rest is intact.
    CHECK(intact >= 20000 - 100);
    CHECK(intact < 20000);
  }
}

TEST_CASE("stack index: a damaged delta is refused, not misread") {
  StackStore store;
  uint64_t base[3] = {0x1000, 0x2000, 0x3000};
  REQUIRE(store.stacks.add(5, base, 3));
  auto delta = [](uint32_t id, uint32_t back, uint32_t inner, uint32_t outer, std::vector<int64_t> rows) {
    uint8_t buf[256];
    fmt::PayloadWriter p(buf, sizeof buf);
    fmt::encode<fmt::StackDeltaSchema>(p, fmt::StackDeltaRecord{id, back, inner, outer, uint32_t(rows.size())});
    for (int64_t d : rows) fmt::encode<fmt::StackDeltaFrameSchema>(p, fmt::StackDeltaFrameRow{d});
    return Written{fmt::kTagStackDelta, std::string(reinterpret_cast<const char*>(p.data()), p.size())};
  };
  CHECK(!decode(delta(6, 0, 1, 1, {1}), &store));   // no base
  CHECK(!decode(delta(6, 7, 1, 1, {1}), &store));   // a base id below 1
  CHECK(!decode(delta(6, 1, 2, 2, {1}), &store));   // keeps more frames than the base has
  Written cut = delta(6, 1, 1, 1, {1, 2});
  cut.payload.pop_back();
  CHECK(!decode(cut, &store));  // a frame row cut off
  CHECK(!store.stacks.contains(6));
  REQUIRE(decode(delta(6, 1, 1, 1, {0x10, -0x20}), &store));
  // base[1] + 0x10, then (past the base's middle) the frame before it - 0x20.
  CHECK(frames_of(store, 6) == std::vector<uint64_t>{0x1000, 0x2010, 0x1ff0, 0x3000});
}

TEST_CASE("stack index: threads delta against their own previous stack") {
  vt::forget_stacks();
  g_written.clear();
  g_keep = true;
  auto a = training_like_stacks(3000), b = training_like_stacks(3000);
  for (auto& s : b) s[0] ^= 0x10000000ull;  // another thread's stacks: different everywhere inside
  std::vector<uint32_t> ida(a.size()), idb(b.size());
  std::thread t1([&] {
    for (size_t i = 0; i < a.size(); ++i) ida[i] = vt::intern_stack(a[i].data(), int(a[i].size()), 0, identity);
  });
  t1.join();  // the stub is not thread-safe: one thread at a time, interleaved below
  std::thread t2([&] {
    for (size_t i = 0; i < b.size(); ++i) idb[i] = vt::intern_stack(b[i].data(), int(b[i].size()), 0, identity);
  });
  t2.join();
  std::thread t3([&] {  // the first thread's stacks again, from a third thread: all known
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(vt::intern_stack(a[i].data(), int(a[i].size()), 0, identity) == ida[i]);
  });
  t3.join();
  StackStore store;
  for (const Written& w : g_written) REQUIRE(decode(w, &store));
  CHECK(vt::analyzer::resolve_stack_deltas(&store));
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(frames_of(store, ida[i]) == a[i]);
  for (size_t i = 0; i < b.size(); ++i) REQUIRE(frames_of(store, idb[i]) == b[i]);
}

TEST_CASE("stack index: deduplication goes on past the first level of the table") {
  vt::forget_stacks();
  g_keep = false;
  g_count = 0;
  // 2^20 slots at level 0, half of them used before level 1 opens: 1.2 M stacks need three levels.
  const uint32_t n = 1200000;
  std::vector<uint32_t> ids(n);
  uint64_t f[2];
  for (uint32_t i = 0; i < n; ++i) {
    f[0] = 0x1000 + i;
    f[1] = 0x7000;
    ids[i] = vt::intern_stack(f, 2, 0, identity);
  }
  CHECK(g_count == n);
  bool same = true;
  for (uint32_t i = 0; i < n; ++i) {
    f[0] = 0x1000 + i;
    same = same && vt::intern_stack(f, 2, 0, identity) == ids[i];
  }
  CHECK(same);
  CHECK(g_count == n);  // the second pass wrote nothing
  g_keep = true;
}

TEST_CASE("stack index: after a fork the child's first record is whole and ids restart") {
  vt::forget_stacks();
  g_written.clear();
  g_keep = true;
  uint64_t s1[3] = {1, 2, 3}, s2[3] = {1, 9, 3};
  REQUIRE(vt::intern_stack(s1, 3, 0, identity) == 1);
  REQUIRE(vt::intern_stack(s2, 3, 0, identity) == 2);
  REQUIRE(g_written.back().tag == fmt::kTagStackDelta);
  vt::forget_stacks();  // what the child of fork() does
  g_written.clear();
  CHECK(vt::intern_stack(s2, 3, 0, identity) == 1);
  REQUIRE(g_written.size() == 1);
  CHECK(g_written[0].tag == fmt::kTagStack);
}

// The hash is the stack's identity (no frame comparison behind it): stacks that differ in one
// frame never share a hash (each lane step is a bijection), and neither do the 4 M stacks that
// differ in two frames by small offsets, in the same lane or in two (what real return addresses
// of neighbouring call sites look like).
TEST_CASE("stack index: the frame hash separates nearby stacks") {
  std::vector<uint64_t> base(27);
  for (size_t i = 0; i < base.size(); ++i) base[i] = 0x7f12'3456'0000ull + i * 0x1234;
  const int n = int(base.size());
  std::vector<uint64_t> hashes;
  auto distinct = [&hashes] {
    std::sort(hashes.begin(), hashes.end());
    return std::adjacent_find(hashes.begin(), hashes.end()) == hashes.end();
  };
  hashes.push_back(vt::hash_frames(base.data(), n, 0));
  for (int at = 0; at < n; ++at)  // one frame differs, anywhere
    for (uint64_t d = 1; d < 4096; ++d) {
      std::vector<uint64_t> f = base;
      f[size_t(at)] += d;
      hashes.push_back(vt::hash_frames(f.data(), n, 0));
    }
  CHECK(distinct());
  for (int second : {4, 5, 25}) {  // two frames differ: the same lane (0 and 4), two lanes, the tail
    hashes.clear();
    for (uint64_t d1 = 0; d1 < 2048; ++d1)
      for (uint64_t d2 = 0; d2 < 2048; ++d2) {
        std::vector<uint64_t> f = base;
        f[0] += d1 * 16;
        f[size_t(second)] += d2 * 16;
        hashes.push_back(vt::hash_frames(f.data(), n, 0));
      }
    CHECK(distinct());
  }
  // Lengths and seeds count: a prefix, and the same frames after another Python part, differ.
  CHECK(vt::hash_frames(base.data(), n, 0) != vt::hash_frames(base.data(), n - 1, 0));
  CHECK(vt::hash_frames(base.data(), n, 1) != vt::hash_frames(base.data(), n, 2));
  CHECK(vt::hash_frames(base.data(), 0, 0) != 0);  // 0 marks an empty slot
}
