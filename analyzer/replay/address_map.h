// AddressMap: the replay's map from an address (or handle) to what lives there, touched by every
// allocation and free of a trace. Open addressing with linear probing and backward-shift deletion:
// no tombstones, so the steady alloc/free churn of a training loop never degrades the table or
// forces a rehash, and a lookup is one multiply and a short scan. Load factor at most 3/4 (it was
// 1/2: with 24-byte slots, 3/4 keeps a table of 1-2 M live allocations at 32-64 B per entry).
// (Replacing absl::flat_hash_map here saved ~47 of ~880 instructions per event of a full report:
// docs/PERFORMANCE.md.)
//
// erase() moves later entries back, so it invalidates iterators; iterate, collect, then erase.
//
// A value type with `slot_flag()` / `set_slot_flag(bool)` (and `static constexpr bool
// kHasSlotFlag`) holds the slot's used flag itself, in a bit of its own (so it is never assigned
// whole through an iterator): the replay's live allocation
// is 16 bytes, so a slot is 24 instead of 32 (docs/PERFORMANCE.md, "Many live allocations").
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace vt::analyzer {

template <typename V, typename = void>
struct AddressSlot {
  uint64_t first = 0;
  V second{};
  bool used = false;
  bool is_used() const { return used; }
  void set_used(bool u) { used = u; }
};
template <typename V>
struct AddressSlot<V, std::enable_if_t<V::kHasSlotFlag>> {
  uint64_t first = 0;
  V second{};
  bool is_used() const { return second.slot_flag(); }
  void set_used(bool u) { second.set_slot_flag(u); }
};

template <typename V>
class AddressMap {
 public:
  using Slot = AddressSlot<V>;

  template <typename S>
  class Iter {
   public:
    Iter(S* p, S* end) : p_(p), end_(end) { skip(); }
    S& operator*() const { return *p_; }
    S* operator->() const { return p_; }
    Iter& operator++() {
      ++p_;
      skip();
      return *this;
    }
    bool operator==(const Iter& o) const { return p_ == o.p_; }
    bool operator!=(const Iter& o) const { return p_ != o.p_; }

   private:
    friend class AddressMap;
    void skip() {
      while (p_ != end_ && !p_->is_used()) ++p_;
    }
    S* p_;
    S* end_;
  };
  using iterator = Iter<Slot>;
  using const_iterator = Iter<const Slot>;

  AddressMap() { resize(64); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator begin() { return {slots_.data(), slots_.data() + slots_.size()}; }
  iterator end() { return at_end(slots_.data() + slots_.size()); }
  const_iterator begin() const { return {slots_.data(), slots_.data() + slots_.size()}; }
  const_iterator end() const { return const_at_end(slots_.data() + slots_.size()); }

  iterator find(uint64_t key) {
    size_t i = probe(key);
    return slots_[i].is_used() ? at(i) : end();
  }
  const_iterator find(uint64_t key) const {
    size_t i = probe(key);
    if (!slots_[i].is_used()) return end();
    const Slot* e = slots_.data() + slots_.size();
    return const_at_end(slots_.data() + i, e);
  }
  size_t count(uint64_t key) const { return slots_[probe(key)].is_used() ? 1 : 0; }
  // Whether the slots outgrow the caches (~3 MiB and more), where a lookup is a cache miss.
  bool beyond_cache() const { return slots_.size() * sizeof(Slot) > (3u << 20); }
  // Starts loading key's home slot, so that a lookup some records later finds it in cache (with
  // millions of live allocations the replay otherwise waits on one cache miss per event).
  void prefetch(uint64_t key) const {
    if (slots_.empty()) return;
    const char* p = reinterpret_cast<const char*>(slots_.data() + home(key));
    __builtin_prefetch(p);
    __builtin_prefetch(p + sizeof(Slot) - 1);  // a slot can straddle two cache lines
  }

  // Inserts (key, value) unless key is present; the entry and whether it was inserted.
  __attribute__((always_inline)) std::pair<iterator, bool> emplace(uint64_t key, const V& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) resize(slots_.size() * 2);
    size_t i = probe(key);
    if (slots_[i].is_used()) return {at(i), false};
    slots_[i].first = key;
    slots_[i].second = value;
    slots_[i].set_used(true);
    ++size_;
    return {at(i), true};
  }

  void erase(iterator it) { erase_at(size_t(it.p_ - slots_.data())); }
  size_t erase(uint64_t key) {
    size_t i = probe(key);
    if (!slots_[i].is_used()) return 0;
    erase_at(i);
    return 1;
  }

 private:
  size_t home(uint64_t key) const {
    // Addresses differ in their middle bits and share the rest: mix, then take the top bits.
    return size_t(((key ^ (key >> 29)) * 0xbf58476d1ce4e5b9ull) >> shift_);
  }
  // The slot holding key, or the empty slot where it would go.
  size_t probe(uint64_t key) const {
    size_t i = home(key);
    while (slots_[i].is_used() && slots_[i].first != key) i = (i + 1) & mask_;
    return i;
  }
  iterator at(size_t i) {
    Slot* e = slots_.data() + slots_.size();
    iterator it(e, e);
    it.p_ = slots_.data() + i;
    return it;
  }
  static iterator at_end(Slot* e) { return iterator(e, e); }
  static const_iterator const_at_end(const Slot* e) { return const_iterator(e, e); }
  static const_iterator const_at_end(const Slot* p, const Slot* e) {
    const_iterator it(e, e);
    it.p_ = p;
    return it;
  }
  // Backward shift: later entries of the same probe run move into the hole when that keeps
  // them reachable from their home slot.
  void erase_at(size_t hole) {
    size_t j = hole;
    for (;;) {
      j = (j + 1) & mask_;
      if (!slots_[j].is_used()) break;
      if (((j - home(slots_[j].first)) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = std::move(slots_[j]);
        hole = j;
      }
    }
    slots_[hole].set_used(false);
    --size_;
  }
  void resize(size_t capacity) {  // a power of two
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (Slot& s : old)
      if (s.is_used()) {
        size_t i = probe(s.first);
        slots_[i] = std::move(s);
        ++size_;
      }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;
};

}  // namespace vt::analyzer
