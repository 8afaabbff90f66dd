// The pools' own figures when an allocation fails (format/meta_records.h, PoolUsageRecord): the
// OOM report then says what the device's stream-ordered pools really reserve and use, instead of
// the footprint the analyzer infers from the allocations it saw (which overstates the cache when
// the release threshold is 0: the driver gives free blocks back at every synchronize). Read with
// cuMemPoolGetAttribute right after the failure, on the failing thread, outside any lock of ours.
#pragma once

#include "event.h"

namespace vt {

// Writes the record for the failed acquire `e` (its device's pools); nothing when no pool of that
// device answers.
void record_pool_usage(const Event& e);

}  // namespace vt
