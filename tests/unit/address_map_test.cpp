// AddressMap (analyzer/replay/address_map.h) against std::unordered_map under random churn: inserts,
// duplicate inserts, erases of present and absent keys, growth, and keys that collide.
#include <catch2/catch.hpp>

#include <random>
#include <unordered_map>

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
