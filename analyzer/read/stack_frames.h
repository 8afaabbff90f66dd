// StackFrames: the analyzer's stack id -> frames store (the `stack` records of a trace). Owns one
// frame arena (the frames of every stack back to back, in blocks of 64 Ki frames, so it grows
// without copying) and an index from id to (offset, length): a dense array indexed by id, since
// the recorder hands out ids from 1 upwards, and a flat hash for ids far beyond the stacks seen
// (only damaged or hand-made traces have them), so a hostile id never sizes the array.
// Nothing is allocated per stack: 8 bytes of index (16 while the array doubles) beside the
// frames themselves. The first record of an id wins, as before.
//
// Why hand-written: with a std::unordered_map<id, std::vector<frame>> (a node and a vector per
// stack) a trace where every event has a new 24-frame stack was analysed at 0.8 M events/s with
// ~290 B of RSS per stack, most of it in malloc; docs/PERFORMANCE.md, "Many distinct stacks".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "address_map.h"
#include "pod_array.h"

namespace vt::analyzer {

class StackFrames {
 public:
  // One stack's frames, innermost first. A stack kept whole: valid while the store lives and is
  // not moved from; one kept as a delta (add_delta): until the next find() or add to the store.
  struct Frames {
    const uint64_t* data = nullptr;
    uint32_t n = 0;
    const uint64_t* begin() const { return data; }
    const uint64_t* end() const { return data + n; }
    size_t size() const { return n; }
    bool empty() const { return n == 0; }
    uint64_t operator[](size_t i) const { return data[i]; }
  };
  static constexpr uint32_t kMaxFrames = 8191;  // what an index entry can hold (a reader allows 4096)

  // Adds stack `id` unless it is known; false when it was known (nothing changes) or n is too big.
  bool add(uint32_t id, const uint64_t* frames, uint32_t n);

  // Two steps for a decoder that writes the frames in place: room for n frames (nullptr when
  // `id` is known or n is too big), then commit() makes them the stack's, or nothing is kept
  // (the next begin() reuses the room).
  uint64_t* begin_add(uint32_t id, uint32_t n);
  void commit();

  // Stack `id`, the whole of it in frames[0..n), read from a stack delta record: `base`'s `inner`
  // innermost and `outer` outermost frames with frames[inner..n - outer) between them. Kept as
  // that change (one word and the new frames) while fewer than kMaxChain deltas lie between it
  // and a stack kept whole, else whole. False when `id` is known, `base` is not, or n is too big.
  // The caller has checked that inner + outer is at most the base's size (the decoder does).
  // Why: when every event has a new stack, whole frames were ~225 B of RSS per stack, and the
  // kernel's zeroing of those pages half of the analysis time (docs/PERFORMANCE.md).
  bool add_delta(uint32_t id, uint32_t base, uint32_t inner, uint32_t outer, const uint64_t* frames, uint32_t n);
  static constexpr int kMaxChain = 32;

  bool contains(uint32_t id) const { return entry(id) != 0; }
  // The stack's frames; false (and *out untouched) when the id is unknown.
  bool find(uint32_t id, Frames* out) const {
    uint64_t e = entry(id);
    if (!e) return false;
    *out = (e & kDelta) ? rebuild(id, e) : frames_of(e);
    return true;
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  // Calls f(id, Frames) for every stack (dense ids in order, then the others in no order).
  template <typename F>
  void for_each(F&& f) const {
    Frames fr;
    for (size_t id = 0; id < dense_.size(); ++id)
      if (dense_[id] && find(uint32_t(id), &fr)) f(uint32_t(id), fr);
    for (const auto& s : sparse_)
      if (find(uint32_t(s.first), &fr)) f(uint32_t(s.first), fr);
  }
  // Bytes held (arena blocks, index), for the benchmarks.
  size_t bytes() const;
  // Words of the arena in use (frames, and the header word of each delta), for the tests.
  size_t arena_words() const { return blocks_.empty() ? 0 : (blocks_.size() - 1) * kBlockFrames + used_; }

 private:
  // An entry: bit 63 set, bit 62 set for a delta, the words' offset in the arena above bit 13,
  // their count below. A delta's first word is its header (base id, inner, outer, chain depth:
  // delta_word), the new frames follow.
  static constexpr uint64_t kPresent = 1ull << 63;
  static constexpr uint64_t kDelta = 1ull << 62;
  static constexpr int kLenBits = 13;
  // 64 Ki frames (512 KiB) per block: small enough that a small trace maps no huge page, large
  // enough that the block list stays short (~2,000 blocks for 5 M stacks of 24 frames).
  static constexpr uint32_t kBlockShift = 16;
  static constexpr uint64_t kBlockFrames = 1ull << kBlockShift;

  uint64_t entry(uint32_t id) const {
    if (id < dense_.size() && dense_[id]) return dense_[id];
    if (sparse_.empty()) return 0;  // (the array may have grown over ids the hash holds)
    auto it = sparse_.find(id);
    return it == sparse_.end() ? 0 : it->second;
  }
  Frames frames_of(uint64_t e) const {
    uint64_t off = (e & ~(kPresent | kDelta)) >> kLenBits;
    return {blocks_[off >> kBlockShift].get() + (off & (kBlockFrames - 1)), uint32_t(e & ((1u << kLenBits) - 1))};
  }

  static uint64_t delta_word(uint32_t base, uint32_t inner, uint32_t outer, uint32_t depth) {
    return uint64_t(base) | uint64_t(inner) << 32 | uint64_t(outer) << 45 | uint64_t(depth) << 58;
  }
  // Stack `id` (entry e, a delta) rebuilt in scratch_, or from the recently added ones.
  Frames rebuild(uint32_t id, uint64_t e) const;
  // Words [off, off+n) of the arena for the stack being added (nullptr when n is too big).
  uint64_t* room(uint32_t n);
  void remember(uint32_t id, const uint64_t* frames, uint32_t n);
  void index(uint32_t id, uint64_t e);
  uint32_t depth_of(uint64_t e) const;

  std::vector<std::unique_ptr<uint64_t[]>> blocks_;
  // The last few stacks added, whole: a delta's base is usually among them (the same thread's
  // previous stack), so the decoder rarely rebuilds a chain.
  static constexpr int kRecent = 4;
  std::vector<uint64_t> recent_[kRecent];
  uint32_t recent_id_[kRecent] = {};
  int recent_next_ = 0;
  mutable std::vector<uint64_t> scratch_[2];
  uint64_t used_ = 0;  // frames used in the last block
  PodArray<uint64_t> dense_;         // id -> entry (0 = none)
  AddressMap<uint64_t> sparse_;      // ids far beyond the dense range
  size_t count_ = 0;
  // The stack begin_add() made room for, until commit().
  uint32_t pending_id_ = 0;
  uint32_t pending_n_ = 0;
  uint64_t pending_off_ = 0;
  bool pending_ = false;
};

}  // namespace vt::analyzer
