// AddressMap (analyzer/replay/address_map.h) against std::unordered_map under random churn: inserts,
// duplicate inserts, erases of present and absent keys, growth, and keys that collide; and across
// the many growths of its 16 parts (each doubles on its own), iteration included.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "address_map.h"

using vt::analyzer::AddressMap;

namespace {
void check_same(const AddressMap<uint64_t>& m, const std::unordered_map<uint64_t, uint64_t>& ref) {
  REQUIRE(m.size() == ref.size());
  size_t seen = 0;
  for (const auto& e : m) {
    auto it = ref.find(e.first);
    REQUIRE(it != ref.end());
    REQUIRE(e.second == it->second);
    ++seen;
  }
  REQUIRE(seen == ref.size());
  for (const auto& [k, v] : ref) {
    auto it = m.find(k);
    REQUIRE(it != m.end());
    REQUIRE(it->second == v);
  }
}
}  // namespace

TEST_CASE("AddressMap matches std::unordered_map under random alloc/free churn") {
  std::mt19937_64 rng(12345);
  // Keys like real addresses (aligned, one region) and a few pathological ones: 0, ~0, and
  // keys that differ only in high bits.
  auto key = [&rng](int kind) -> uint64_t {
    switch (kind) {
      case 0: return 0x7f0000000000ull + (rng() % 4096) * 512;
      case 1: return (rng() % 64) << 48;
      default: return rng() % 3 == 0 ? 0 : (rng() % 2 ? ~0ull : rng());
    }
  };
  AddressMap<uint64_t> m;
  std::unordered_map<uint64_t, uint64_t> ref;
  for (int step = 0; step < 200000; ++step) {
    uint64_t k = key(int(rng() % 10 < 8 ? 0 : rng() % 3));
    if (rng() % 100 < 55) {
      uint64_t v = rng();
      auto [it, inserted] = m.emplace(k, v);
      auto [rit, rinserted] = ref.emplace(k, v);
      REQUIRE(inserted == rinserted);
      REQUIRE(it->first == k);
      REQUIRE(it->second == rit->second);
    } else if (rng() % 2) {
      REQUIRE(m.erase(k) == ref.erase(k));
    } else {
      auto it = m.find(k);
      REQUIRE((it == m.end()) == (ref.count(k) == 0));
      if (it != m.end()) {
        ref.erase(k);
        m.erase(it);
      }
    }
    if (step % 20000 == 0) check_same(m, ref);
  }
  check_same(m, ref);
  // Drain completely: every key still reachable after all the backward shifts.
  std::vector<uint64_t> keys;
  for (const auto& e : m) keys.push_back(e.first);
  for (uint64_t k : keys) REQUIRE(m.erase(k) == 1);
  CHECK(m.empty());
  CHECK(m.begin() == m.end());
}

// The map is 16 parts that double one at a time: grow it to 300 k entries and back, twice, with
// churn at every size, and check after each stretch that lookups agree with std::unordered_map and
// that iteration visits every entry exactly once (through all the parts, whatever their sizes).
TEST_CASE("AddressMap's parts grow apart and iteration visits every entry once") {
  std::mt19937_64 rng(777);
  AddressMap<uint64_t> m;
  std::unordered_map<uint64_t, uint64_t> ref;
  std::vector<uint64_t> keys;  // those in ref, for erasing a random one
  auto check_iteration = [&](const AddressMap<uint64_t>& map) {
    REQUIRE(map.size() == ref.size());
    REQUIRE(map.empty() == ref.empty());
    std::unordered_set<uint64_t> seen;
    size_t visits = 0;
    for (auto it = map.begin(); it != map.end(); ++it) {
      ++visits;
      REQUIRE(seen.insert(it->first).second);  // not visited before
      auto r = ref.find(it->first);
      REQUIRE(r != ref.end());
      REQUIRE(it->second == r->second);
    }
    REQUIRE(visits == ref.size());
  };
  auto erase_random = [&]() {
    size_t at = rng() % keys.size();
    uint64_t k = keys[at];
    keys[at] = keys.back();
    keys.pop_back();
    ref.erase(k);
    if (rng() % 2) {
      REQUIRE(m.erase(k) == 1);
    } else {
      auto it = m.find(k);
      REQUIRE(it != m.end());
      REQUIRE(it->first == k);
      m.erase(it);
    }
    REQUIRE(m.find(k) == m.end());
    REQUIRE(m.count(k) == 0);
  };
  // Addresses of a 512-byte-aligned heap, and now and then any 64-bit value.
  auto fresh_key = [&]() -> uint64_t {
    return rng() % 8 ? 0x7f0000000000ull + (rng() % (1ull << 26)) * 512 : rng();
  };
  for (int round = 0; round < 2; ++round) {
    size_t target = 300000;
    while (ref.size() < target) {  // grow, with one erase for every three inserts
      uint64_t k = fresh_key(), v = rng();
      auto [it, inserted] = m.emplace(k, v);
      auto [rit, rinserted] = ref.emplace(k, v);
      REQUIRE(inserted == rinserted);
      REQUIRE(it->first == k);
      REQUIRE(it->second == rit->second);
      if (inserted) keys.push_back(k);
      if (rng() % 4 == 0 && !keys.empty()) erase_random();
      if (ref.size() % 37501 == 0) check_iteration(m);
    }
    check_iteration(m);
    for (uint64_t k : keys) {
      auto it = m.find(k);
      REQUIRE(it != m.end());
      REQUIRE(it->second == ref[k]);
    }
    for (int i = 0; i < 1000; ++i) {  // mostly absent keys (odd)
      uint64_t k = fresh_key() | 1;
      REQUIRE(m.count(k) == ref.count(k));
    }
    // A copy and a moved-to map hold the same, and the moved-from one is empty and usable.
    AddressMap<uint64_t> copy = m;
    check_iteration(copy);
    AddressMap<uint64_t> moved = std::move(copy);
    check_iteration(moved);
    CHECK(copy.empty());
    CHECK(copy.begin() == copy.end());
    copy.emplace(42, 1);
    CHECK(copy.size() == 1);
    CHECK(copy.find(42)->second == 1);
    // Drain to a few, then the next round grows it again.
    while (ref.size() > 10) {
      erase_random();
      if (ref.size() % 50000 == 0) check_iteration(m);
    }
    check_iteration(m);
  }
}

// Parts of 2 MiB and more come from mmap with a huge-page hint, their header telling the deleter
// how to free them: 2 M entries (parts of 262,144 slots, 6 MiB each) through growth, a copy, a
// move and erasure, and a value type with a destructor (its slots are destroyed before the unmap).
TEST_CASE("AddressMap's large parts (mapped, huge-page hint) keep every entry through growth, copy and move") {
  AddressMap<uint64_t> m;
  constexpr uint64_t kN = 2000000;
  for (uint64_t i = 1; i <= kN; ++i) REQUIRE(m.emplace(0x7f0000000000ull + i * 512, i * 3).second);
  REQUIRE(m.size() == kN);
  AddressMap<uint64_t> copy = m;
  AddressMap<uint64_t> moved = std::move(copy);
  CHECK(copy.empty());
  for (uint64_t i = 1; i <= kN; ++i) {
    auto it = moved.find(0x7f0000000000ull + i * 512);
    REQUIRE(it != moved.end());
    REQUIRE(it->second == i * 3);
    if (i % 2) REQUIRE(m.erase(0x7f0000000000ull + i * 512) == 1);
  }
  CHECK(m.size() == kN / 2);
  CHECK(moved.size() == kN);
  for (uint64_t i = 2; i <= kN; i += 2) REQUIRE(m.find(0x7f0000000000ull + i * 512)->second == i * 3);

  AddressMap<std::string> s;  // 48-byte slots: parts of 65,536 slots, 3 MiB
  constexpr uint64_t kS = 600000;
  for (uint64_t i = 1; i <= kS; ++i) REQUIRE(s.emplace(i * 64, std::string(40, char('a' + i % 26))).second);
  AddressMap<std::string> s2 = s;
  for (uint64_t i = 1; i <= kS; ++i) REQUIRE(s2.find(i * 64)->second == std::string(40, char('a' + i % 26)));
}
