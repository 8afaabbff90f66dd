// Site groups on hand-made rows of the replay's per-site table: the rows a list takes (one
// device's device bucket, or every row), rows that fell to zero left out, biggest first with ties
// by stack id, shares of what the list holds; and device bytes by op kind (device memory kinds
// only).
#include <catch2/catch.hpp>

#include "aggregators/site_groups.h"

using namespace vt::analyzer;
using vt::MemKind;

namespace {

SiteTable::Row row(uint32_t stack, int device, Bucket b, uint64_t bytes, uint64_t count) {
  return {SiteKey{stack, device, b}, 0, SiteBytes{bytes, count}};
}

}  // namespace

TEST_CASE("site groups: one device's device bucket, or every row, biggest first") {
  const std::vector<SiteTable::Row> rows = {
      row(1, 0, Bucket::Device, 100, 1),   row(2, 0, Bucket::Device, 300, 2),  row(3, 0, Bucket::Device, 300, 1),
      row(4, 1, Bucket::Device, 500, 5),   row(5, 0, Bucket::PinnedHost, 50, 1), row(6, 0, Bucket::Device, 0, 0),
      row(7, 0, Bucket::Device, 0, 2),  // zero bytes but live allocations (zero-size): kept
  };
  std::vector<SiteGroup> g = site_groups(rows, 0, true);
  REQUIRE(g.size() == 4);
  CHECK(g[0].stack_id == 2);  // 300 bytes, tie with 3: lower stack id first
  CHECK(g[1].stack_id == 3);
  CHECK(g[2].stack_id == 1);
  CHECK(g[3].stack_id == 7);
  CHECK(g[0].share == Approx(300.0 / 700.0));
  CHECK(g[0].kind == "device");
  CHECK(g[0].device == 0);
  CHECK(g[0].count == 2);

  std::vector<SiteGroup> all = site_groups(rows, 0, false);
  REQUIRE(all.size() == 6);  // every device and bucket; only the empty row 6 is left out
  CHECK(all[0].stack_id == 4);
  CHECK(all[0].device == 1);
  CHECK(all[0].share == Approx(500.0 / 1250.0));
  CHECK(all.back().stack_id == 7);
  bool pinned = false;
  for (const SiteGroup& x : all) pinned |= x.stack_id == 5 && x.kind == "pinned_host";
  CHECK(pinned);
  CHECK(site_groups(std::vector<SiteTable::Row>{}, 0, true).empty());
}

TEST_CASE("site groups: device bytes by op kind name, device memory kinds with bytes only") {
  std::array<uint64_t, kKindSlots> kinds{};
  kinds[int(MemKind::Device)] = 10;
  kinds[int(MemKind::Async)] = 20;
  kinds[int(MemKind::VmmPhysical)] = 30;
  kinds[int(MemKind::Array)] = 0;
  kinds[int(MemKind::Managed)] = 99;  // not device memory: never in the device bucket's split
  std::map<std::string, uint64_t> by = bytes_by_kind(kinds);
  CHECK(by == std::map<std::string, uint64_t>{{"device", 10}, {"async", 20}, {"vmm_physical", 30}});
}
