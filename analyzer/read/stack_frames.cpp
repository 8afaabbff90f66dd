// See stack_frames.h.
#include "stack_frames.h"

#include <algorithm>
#include <cstring>

namespace vt::analyzer {

uint64_t* StackFrames::room(uint32_t n) {
  // A stack's words never straddle two blocks: start a new one when they do not fit (the tail
  // left is under one stack's words). Blocks are allocated, not zeroed: the kernel maps their
  // pages as frames are written.
  if (n > kMaxFrames) return nullptr;
  if (blocks_.empty() || used_ + n > kBlockFrames) {
    blocks_.emplace_back(new uint64_t[kBlockFrames]);
    used_ = 0;
  }
  pending_off_ = (uint64_t(blocks_.size() - 1) << kBlockShift) + used_;
  return blocks_.back().get() + used_;
}

void StackFrames::index(uint32_t id, uint64_t e) {
  // Ids are dense from 1: the array grows with them (doubling). An id far beyond the stacks
  // seen (a damaged or hand-made trace: any 32-bit value) goes to the hash instead.
  if (id >= dense_.size() && uint64_t(id) < 2 * uint64_t(count_) + 65536)
    dense_.resize(std::max<size_t>(size_t(id) + 1, dense_.size() * 2), 0);
  if (id < dense_.size())
    dense_[id] = e;
  else
    sparse_.emplace(id, e);
  ++count_;
}

void StackFrames::remember(uint32_t id, const uint64_t* frames, uint32_t n) {
  std::vector<uint64_t>& r = recent_[recent_next_];
  r.assign(frames, frames + n);
  recent_id_[recent_next_] = id;
  recent_next_ = (recent_next_ + 1) % kRecent;
}

uint32_t StackFrames::depth_of(uint64_t e) const {
  if (!(e & kDelta)) return 0;
  return uint32_t(frames_of(e).data[0] >> 58);
}

uint64_t* StackFrames::begin_add(uint32_t id, uint32_t n) {
  pending_ = false;
  if (n > kMaxFrames || contains(id)) return nullptr;
  uint64_t* out = room(n);
  pending_id_ = id;
  pending_n_ = n;
  pending_ = true;
  return out;
}

void StackFrames::commit() {
  if (!pending_) return;
  pending_ = false;
  used_ += pending_n_;
  index(pending_id_, kPresent | (pending_off_ << kLenBits) | pending_n_);
  // (Whole stacks are found in the arena directly: not remembered.)
}

bool StackFrames::add(uint32_t id, const uint64_t* frames, uint32_t n) {
  uint64_t* out = begin_add(id, n);
  if (!out) return false;
  if (n) memcpy(out, frames, n * sizeof *frames);
  commit();
  return true;
}

bool StackFrames::add_delta(uint32_t id, uint32_t base, uint32_t inner, uint32_t outer, const uint64_t* frames,
                            uint32_t n) {
  pending_ = false;
  uint64_t be = entry(base);
  if (!be || n > kMaxFrames || inner + outer > n || contains(id)) return false;
  uint32_t depth = depth_of(be) + 1;
  if (depth >= uint32_t(kMaxChain)) {  // kept whole: the chain behind the next ones starts here
    if (!add(id, frames, n)) return false;
    remember(id, frames, n);
    return true;
  }
  uint32_t fresh = n - inner - outer;
  uint64_t* out = room(fresh + 1);
  out[0] = delta_word(base, inner, outer, depth);
  if (fresh) memcpy(out + 1, frames + inner, fresh * sizeof *frames);
  used_ += fresh + 1;
  index(id, kPresent | kDelta | (pending_off_ << kLenBits) | (fresh + 1));
  remember(id, frames, n);
  return true;
}

StackFrames::Frames StackFrames::rebuild(uint32_t id, uint64_t e) const {
  for (int i = 0; i < kRecent; ++i)
    if (recent_id_[i] == id && id != 0) return {recent_[i].data(), uint32_t(recent_[i].size())};
  // The chain down to a stack kept whole (at most kMaxChain links: add_delta's rule), then
  // each delta applied on the way back up, alternating between the two scratch buffers.
  uint64_t chain[kMaxChain + 1];
  int k = 0;
  while ((e & kDelta) && k <= kMaxChain) {
    chain[k++] = e;
    e = entry(uint32_t(frames_of(e).data[0] & 0xffffffffu));
    if (!e) return {};
  }
  if (e & kDelta) return {};  // (never: add_delta bounds the chain)
  Frames cur = frames_of(e);
  for (int i = k - 1; i >= 0; --i) {
    Frames node = frames_of(chain[i]);
    uint64_t h = node.data[0];
    uint32_t inner = uint32_t(h >> 32) & 0x1fff, outer = uint32_t(h >> 45) & 0x1fff, fresh = node.n - 1;
    if (inner + outer > cur.n) return {};
    std::vector<uint64_t>& out = scratch_[i & 1];
    out.resize(size_t(inner) + fresh + outer);
    std::copy(cur.data, cur.data + inner, out.begin());
    std::copy(node.data + 1, node.data + 1 + fresh, out.begin() + inner);
    std::copy(cur.data + (cur.n - outer), cur.data + cur.n, out.begin() + inner + fresh);
    cur = {out.data(), uint32_t(out.size())};
  }
  return cur;
}
size_t StackFrames::bytes() const {
  size_t recent = 0;
  for (const auto& r : recent_) recent += r.capacity() * sizeof(uint64_t);
  return blocks_.size() * kBlockFrames * sizeof(uint64_t) + dense_.capacity() * sizeof(uint64_t) + recent +
         sparse_.size() * 2 * sizeof(AddressMap<uint64_t>::Slot);
}

}  // namespace vt::analyzer
