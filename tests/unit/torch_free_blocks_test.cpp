// analyzer/export/torch_free_blocks.h, hand-worked against PyTorch 2.6's allocator rules: a free
// block's requested_size after splits and merges, segments that touch, an expandable segment's
// maps and unmaps, and when a segment keeps the frames of its cudaMalloc.
#include <catch2/catch.hpp>

#include "torch_free_blocks.h"

using vt::analyzer::TorchFreeBlocks;

namespace {
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t S = 0x7f0000000000ull;
}  // namespace

TEST_CASE("torch free blocks: a split leaves the free rest its request, a freed block's request wins its merges") {
  TorchFreeBlocks f;
  f.segment_alloc(S, 20 * MiB, 7);
  CHECK(f.segment_stack(S) == 7);
  f.alloc(S, 4 * MiB);  // split at the start: the original block moves to S + 4 MiB, asking 0
  CHECK(f.segment_stack(S) == 0);
  CHECK(f.free_requested(S + 4 * MiB) == 0);
  f.alloc(S + 4 * MiB, 6 * MiB);  // split again: the rest keeps its request (0)
  f.free(S, 4 * MiB, 4 * MiB - 100);  // alone: its own request
  CHECK(f.free_requested(S) == 4 * MiB - 100);
  f.free(S + 4 * MiB, 6 * MiB, 5 * MiB + 1);  // absorbs both neighbours: its request
  CHECK(f.free_requested(S) == 5 * MiB + 1);
  CHECK(f.free_requested(S + 4 * MiB) == 0);
  CHECK(f.free_requested(S + 10 * MiB) == 0);
  f.alloc(S, 2 * MiB);  // a split of that block: the rest, after it, keeps 5 MiB + 1
  CHECK(f.free_requested(S + 2 * MiB) == 5 * MiB + 1);
  f.free(S, 2 * MiB, 3);
  CHECK(f.free_requested(S) == 3);
}

TEST_CASE("torch free blocks: an unsplit first block keeps the segment's frames, blocks of two segments never merge") {
  TorchFreeBlocks f;
  f.segment_alloc(S, 2 * MiB, 5);
  f.segment_alloc(S + 2 * MiB, 2 * MiB, 6);  // adjacent addresses, another cudaMalloc
  f.alloc(S, 2 * MiB);  // the whole segment: no split
  f.free(S, 2 * MiB, 2 * MiB - 512);
  CHECK(f.segment_stack(S) == 5);
  CHECK(f.free_requested(S) == 2 * MiB - 512);
  CHECK(f.free_requested(S + 2 * MiB) == 0);  // its own free block, not merged
  f.alloc(S + 2 * MiB + 0, 512);
  CHECK(f.segment_stack(S + 2 * MiB) == 0);
  CHECK(f.free_requested(S + 2 * MiB + 512) == 0);
  f.segment_free(S);
  CHECK(f.free_requested(S) == 0);
  CHECK(f.segment_stack(S) == 0);
}

TEST_CASE("torch free blocks: an expandable segment's pages, mapped and unmapped") {
  TorchFreeBlocks f;
  f.reservation(S, 1024 * MiB);
  f.map(S, 20 * MiB, 9);  // the first page: the segment's frames
  CHECK(f.segment_stack(S) == 9);
  f.alloc(S, 20 * MiB);  // the whole page: unsplit
  f.map(S + 20 * MiB, 20 * MiB, 10);
  f.alloc(S + 20 * MiB, 16 * MiB);  // split: not the first block, the frames stay
  CHECK(f.segment_stack(S) == 9);
  f.free(S + 20 * MiB, 16 * MiB, 16 * MiB - 8);  // merges with the 4 MiB after it
  CHECK(f.free_requested(S + 20 * MiB) == 16 * MiB - 8);
  f.unmap(S + 20 * MiB, 20 * MiB);  // the free block's object goes with the unmapped page
  CHECK(f.free_requested(S + 20 * MiB) == 0);
  f.map(S + 20 * MiB, 20 * MiB, 11);  // and comes back with it
  CHECK(f.free_requested(S + 20 * MiB) == 16 * MiB - 8);
  f.free(S, 20 * MiB, 20 * MiB);  // the first block absorbs the mapped page after it
  CHECK(f.free_requested(S) == 20 * MiB);
  f.alloc(S, 1 * MiB);  // a split at the start: the segment's frames are gone
  CHECK(f.segment_stack(S) == 0);
  CHECK(f.free_requested(S + 1 * MiB) == 20 * MiB);
  f.reservation_free(S);
  CHECK(f.free_requested(S + 1 * MiB) == 0);
}
