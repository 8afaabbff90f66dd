// See clock_align.h.
#include "clock_align.h"

namespace vt::cupti {

ClockSample sample_offset(MonoFn mono, CuptiTimeFn cupti, int tries) {
  ClockSample best;
  for (int i = 0; i < tries; ++i) {
    uint64_t before = mono();
    uint64_t c = 0;
    bool ok = cupti(&c);
    uint64_t after = mono();
    if (!ok || c == 0 || after < before) continue;
    uint64_t window = after - before;
    if (best.ok && window >= best.window) continue;
    best.ok = true;
    best.window = window;
    best.offset = int64_t(c) - int64_t(before + window / 2);
  }
  return best;
}

bool ClockAlign::update(const ClockSample& s) {
  if (!s.ok) return false;
  if (known()) {
    int64_t d = s.offset - offset();
    uint64_t moved = uint64_t(d < 0 ? -d : d);
    uint64_t noise = 2 * (s.window + window());
    if (moved <= (noise > kMinStepNs ? noise : kMinStepNs)) return false;
  }
  offset_.store(s.offset, std::memory_order_relaxed);
  window_.store(s.window, std::memory_order_relaxed);
  known_.store(true, std::memory_order_release);
  return true;
}

}  // namespace vt::cupti
