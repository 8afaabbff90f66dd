// What a report keeps of an event that can repeat without bound (a failed allocation: a program
// that catches torch.OutOfMemoryError and retries smaller can fail thousands of times): the first
// kDetailedOoms in full and, after them, the latest one, replaced by each newer one. Memory stays
// bounded whatever the count; the first failures (the pattern) and the last (usually the one that
// ended the run) are there, and the count of those left out is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vt::analyzer {

inline constexpr size_t kDetailedOoms = 64;  // first ones in full, then the latest

template <class T>
class FirstAndLatest {
 public:
  // The slot for the next event: a new one, or the latest's (cleared; *replaced = true).
  T& next(bool* replaced = nullptr) {
    ++total_;
    bool again = items_.size() > kDetailedOoms;
    if (again) items_.back() = T{};
    else items_.emplace_back();
    if (replaced) *replaced = again;
    return items_.back();
  }
  std::vector<T>& items() { return items_; }
  const std::vector<T>& items() const { return items_; }
  // Events seen but not kept (replaced latest ones).
  uint64_t left_out() const { return total_ - items_.size(); }

 private:
  std::vector<T> items_;
  uint64_t total_ = 0;
};

}  // namespace vt::analyzer
