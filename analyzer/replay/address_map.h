// AddressMap: the replay's map from an address (or handle) to what lives there, touched by every
// allocation and free of a trace. Open addressing with linear probing and backward-shift deletion:
// no tombstones, so the steady alloc/free churn of a training loop never degrades the table or
// forces a rehash, and a lookup is one multiply and a short scan. Load factor at most 3/4 (it was
// 1/2: with 24-byte slots, 3/4 keeps a table of 1-2 M live allocations at 32-64 B per entry).
// (Replacing absl::flat_hash_map here saved ~47 of ~880 instructions per event of a full report:
// docs/PERFORMANCE.md.)
//
// The slots are split into 16 parts, each its own table that doubles on its own; the top 4 bits
// of the mixed key pick the part, the next bits the home slot in it. Why: a table that doubles
// keeps its old slots while it moves them into the new ones, so one table of 1.5 M entries peaked
// at 48 MB old + 96 MB new, and the old copy was a third of the report's peak RSS at 2 M live
// (157.7 MB: 64 B per live allocation, issue 43's limit). Parts grow one at a time, so only one
// part's old slots (1/16 of the whole) exist beside the new ones: 115.9 MB, 42.7 B per live
// allocation. Picking the part costs a shift and a load of its 32-byte header (the 16 stay in
// cache); a part's room is counted down and end() is a null pointer, so the churn report runs 4
// instructions per event fewer than with one table (docs/PERFORMANCE.md, "Issue 43's targets").
//
// erase() moves later entries back, so it invalidates iterators; iterate, collect, then erase.
// Iteration visits the parts in order, each in slot order (an order of the hash, not of keys).
//
// A value type with `slot_flag()` / `set_slot_flag(bool)` (and `static constexpr bool
// kHasSlotFlag`) holds the slot's used flag itself, in a bit of its own (so it is never assigned
// whole through an iterator): the replay's live allocation
// is 16 bytes, so a slot is 24 instead of 32 (docs/PERFORMANCE.md, "Many live allocations").
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

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

 private:
  static constexpr unsigned kPartBits = 4, kParts = 1u << kPartBits;
  static constexpr size_t kFirstPartSlots = 8;  // 16 x 8 slots at first: 3 KiB
  // A part's slots. Parts of 2 MiB and more are mapped with a huge-page hint (MADV_HUGEPAGE): with
  // a million live allocations every lookup is a cache miss and, with 4 KiB pages, a TLB miss too;
  // where transparent huge pages are "madvise" (Debian's and Ubuntu's default) only a hint gets them.
  // How they were allocated is written in a header before them, so that the deleter holds nothing
  // and a part stays 32 bytes (a 40-byte part cost 5 instructions per event of the churn report).
  struct SlotsHeader {
    size_t bytes, n;  // the allocation's size, with this header; the slots
    bool mapped;      // mmap (else operator new)
  };
  static constexpr size_t kSlotsHeader = 64;  // (the slots start on a cache line of their own)
  struct FreeSlots {
    void operator()(Slot* p) const {
      char* base = reinterpret_cast<char*>(p) - kSlotsHeader;
      const SlotsHeader h = *reinterpret_cast<const SlotsHeader*>(base);
      std::destroy_n(p, h.n);
      if (h.mapped) munmap(base, h.bytes);
      else ::operator delete(base, std::align_val_t(kSlotsHeader));
    }
  };
  using Slots = std::unique_ptr<Slot[], FreeSlots>;
  static Slots new_slots(size_t n) {
    const size_t bytes = kSlotsHeader + n * sizeof(Slot);
    void* base = nullptr;
    bool mapped = false;
    if (bytes >= (size_t(2) << 20)) {
      base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      mapped = base != MAP_FAILED;
      if (mapped) madvise(base, bytes, MADV_HUGEPAGE);  // (a kernel without THP refuses: 4 KiB pages)
    }
    if (!mapped) base = ::operator new(bytes, std::align_val_t(kSlotsHeader));  // (throws as new[] did)
    new (base) SlotsHeader{bytes, n, mapped};
    Slot* p = reinterpret_cast<Slot*>(static_cast<char*>(base) + kSlotsHeader);
    std::uninitialized_value_construct_n(p, n);
    return Slots(p);
  }
  // One part: a table of mask + 1 slots (a power of two) that takes `room` more entries before
  // it doubles (load ≤ 3/4). 32 bytes.
  struct Part {
    Slots slots;
    size_t mask = 0;
    size_t room = 0;
    unsigned shift = 64;  // home slot = (mixed key << kPartBits) >> shift
  };
  static_assert(sizeof(Part) == 32);

 public:
  template <typename S>
  class Iter {
   public:
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
    Iter() = default;  // end(): p_ null
    Iter(S* p, const Part* part, const Part* last)
        : p_(p), end_(part->slots.get() + part->mask + 1), part_(part), last_(last) {}
    // From p_ on to the next used slot, through the later parts; null past the last.
    void skip() {
      for (;;) {
        while (p_ != end_ && !p_->is_used()) ++p_;
        if (p_ != end_) return;
        if (++part_ == last_) {
          p_ = nullptr;
          return;
        }
        p_ = part_->slots.get();
        end_ = p_ + part_->mask + 1;
      }
    }
    S* p_ = nullptr;
    S* end_ = nullptr;
    const Part* part_ = nullptr;  // the part p_ is in
    const Part* last_ = nullptr;  // the end of the map's parts
  };
  using iterator = Iter<Slot>;
  using const_iterator = Iter<const Slot>;

  AddressMap() { init(); }
  AddressMap(const AddressMap& o) { *this = o; }
  AddressMap(AddressMap&& o) { *this = std::move(o); }
  AddressMap& operator=(const AddressMap& o) {
    if (this == &o) return *this;
    for (unsigned k = 0; k < kParts; ++k) {
      const Part& from = o.parts_[k];
      Part& to = parts_[k];
      to.slots = new_slots(from.mask + 1);
      std::copy(from.slots.get(), from.slots.get() + from.mask + 1, to.slots.get());
      to.mask = from.mask, to.room = from.room, to.shift = from.shift;
    }
    size_ = o.size_, slot_count_ = o.slot_count_;
    return *this;
  }
  AddressMap& operator=(AddressMap&& o) {  // o is left empty, and usable
    if (this == &o) return *this;
    for (unsigned k = 0; k < kParts; ++k) parts_[k] = std::move(o.parts_[k]);
    size_ = o.size_, slot_count_ = o.slot_count_;
    o.init();
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator begin() { return first<Slot>(parts_); }
  iterator end() { return {}; }
  const_iterator begin() const { return first<const Slot>(parts_); }
  const_iterator end() const { return {}; }

  iterator find(uint64_t key) {
    const uint64_t h = mix(key);
    Part& t = part(h);
    Slot* s = t.slots.get() + probe(t, h, key);
    return s->is_used() ? iterator(s, &t, parts_ + kParts) : iterator();
  }
  const_iterator find(uint64_t key) const {
    const uint64_t h = mix(key);
    const Part& t = part(h);
    const Slot* s = t.slots.get() + probe(t, h, key);
    return s->is_used() ? const_iterator(s, &t, parts_ + kParts) : const_iterator();
  }
  size_t count(uint64_t key) const { return find(key) != end() ? 1 : 0; }
  // Whether the slots outgrow the caches (~3 MiB and more), where a lookup is a cache miss.
  bool beyond_cache() const { return slot_count_ > (3u << 20) / sizeof(Slot); }
  // Starts loading key's home slot and the next one, so that a lookup some records later finds
  // them in cache (with millions of live allocations the replay otherwise waits on a cache miss
  // per event: the home slot's, then the next slot's, which an insert probes when home is taken
  // and an erase always reads; prefetching it too made the 1 M-live report ~12% faster).
  void prefetch(uint64_t key) const {
    const uint64_t h = mix(key);
    const Part& t = part(h);
    // As an integer: the last slot's next is past the array (a probe wraps to slot 0), and a
    // prefetch there loads nothing and never faults.
    const uintptr_t p = reinterpret_cast<uintptr_t>(t.slots.get() + home(t, h));
    prefetch_line(p);
    prefetch_line(p + sizeof(Slot) - 1);  // a slot can straddle two cache lines
    prefetch_line(p + 2 * sizeof(Slot) - 1);
  }

  // Inserts (key, value) unless key is present; the entry and whether it was inserted.
  __attribute__((always_inline)) std::pair<iterator, bool> emplace(uint64_t key, const V& value) {
    const uint64_t h = mix(key);
    Part& t = part(h);
    if (__builtin_expect(t.room == 0, 0)) grow(t);
    Slot* s = t.slots.get() + probe(t, h, key);
    if (s->is_used()) return {iterator(s, &t, parts_ + kParts), false};
    s->first = key;
    s->second = value;
    s->set_used(true);
    --t.room;
    ++size_;
    return {iterator(s, &t, parts_ + kParts), true};
  }

  void erase(iterator it) {
    Part& t = const_cast<Part&>(*it.part_);  // one of parts_: this map is not const
    erase_at(t, size_t(it.p_ - t.slots.get()));
  }
  size_t erase(uint64_t key) {
    const uint64_t h = mix(key);
    Part& t = part(h);
    size_t i = probe(t, h, key);
    if (!t.slots[i].is_used()) return 0;
    erase_at(t, i);
    return 1;
  }

 private:
  // An asm statement, not __builtin_prefetch: with a third __builtin_prefetch here GCC 12 left
  // none of them in AnalysisPass::feed_ahead (its report of 1 M live allocations ran 2x slower).
  static void prefetch_line(uintptr_t address) {
#if defined(__x86_64__)
    asm volatile("prefetcht0 (%0)" ::"r"(address));
#else
    __builtin_prefetch(reinterpret_cast<const void*>(address));
#endif
  }
  // Addresses differ in their middle bits and share the rest: mix, then take the top bits.
  static uint64_t mix(uint64_t key) { return (key ^ (key >> 29)) * 0xbf58476d1ce4e5b9ull; }
  Part& part(uint64_t h) { return parts_[h >> (64 - kPartBits)]; }
  const Part& part(uint64_t h) const { return parts_[h >> (64 - kPartBits)]; }
  static size_t home(const Part& t, uint64_t h) { return size_t((h << kPartBits) >> t.shift); }
  // The slot of t holding key (mixed: h), or the empty slot where it would go.
  static size_t probe(const Part& t, uint64_t h, uint64_t key) {
    const Slot* s = t.slots.get();
    size_t i = home(t, h);
    while (s[i].is_used() && s[i].first != key) i = (i + 1) & t.mask;
    return i;
  }
  template <typename S, typename P>
  static Iter<S> first(P* parts) {
    Iter<S> it(parts[0].slots.get(), parts, parts + kParts);
    it.skip();
    return it;
  }
  // Backward shift: later entries of the same probe run move into the hole when that keeps
  // them reachable from their home slot.
  void erase_at(Part& t, size_t hole) {
    Slot* s = t.slots.get();
    const size_t mask = t.mask;
    size_t j = hole;
    for (;;) {
      j = (j + 1) & mask;
      if (!s[j].is_used()) break;
      if (((j - home(t, mix(s[j].first))) & mask) >= ((j - hole) & mask)) {
        s[hole] = std::move(s[j]);
        hole = j;
      }
    }
    s[hole].set_used(false);
    ++t.room;
    --size_;
  }
  void init() {
    for (Part& t : parts_) {
      t.slots = new_slots(kFirstPartSlots);
      set_capacity(t, kFirstPartSlots);
      t.room = kFirstPartSlots / 4 * 3;
    }
    size_ = 0;
    slot_count_ = kParts * kFirstPartSlots;
  }
  static void set_capacity(Part& t, size_t capacity) {  // a power of two
    t.mask = capacity - 1;
    t.shift = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --t.shift;
  }
  // Doubles t: its old slots are freed before another part grows.
  __attribute__((noinline)) void grow(Part& t) {
    const size_t old_capacity = t.mask + 1, capacity = old_capacity * 2;
    Slots old = std::move(t.slots);
    t.slots = new_slots(capacity);
    set_capacity(t, capacity);
    size_t n = 0;
    for (size_t k = 0; k < old_capacity; ++k)
      if (old[k].is_used()) {
        t.slots[probe(t, mix(old[k].first), old[k].first)] = std::move(old[k]);
        ++n;
      }
    t.room = capacity / 4 * 3 - n;
    slot_count_ += capacity - old_capacity;
  }

  Part parts_[kParts];
  size_t size_ = 0;
  size_t slot_count_ = 0;  // of all parts
};

}  // namespace vt::analyzer
