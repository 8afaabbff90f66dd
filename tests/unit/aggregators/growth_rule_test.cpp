// The growth rule's checkpoint cadence (aggregators/growth_rule.h): every 8 events, then, once
// more than 128 checkpoints were taken, every other one is dropped and the next come twice as far
// apart, starting with the very next one (the cadence before the shared rule; a 1 M-event report
// showed the difference in its growth figures).
#include <catch2/catch.hpp>

#include "aggregators/growth_rule.h"

using namespace vt::analyzer;

TEST_CASE("growth rule: checkpoints every 8 events, then twice as far apart after thinning") {
  SiteCheckpoints c;
  std::vector<uint64_t> due_at;
  for (uint64_t event = 1; event <= 8 * 129 + 64; ++event)
    if (c.due()) {
      due_at.push_back(event);
      c.add(event, {});
    }
  REQUIRE(due_at.size() >= 131);
  CHECK(due_at[0] == 8);
  CHECK(due_at[128] == 8 * 129);  // the 129th: thinned to 65 right after
  CHECK(c.times().size() == 65 + (due_at.size() - 129));
  CHECK(due_at[129] == 8 * 129 + 16);  // the next one already at the new cadence
  CHECK(due_at[130] == 8 * 129 + 32);
}
