// PyTorch's free blocks as its caching allocator leaves them, for `export --torch-snapshot`: what
// its snapshot gives an `inactive` block and a segment that the block records alone do not say.
// PyTorch 2.6's DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp) keeps one Block
// object per piece of a segment, and its snapshot shows each object's fields:
//   - a free block's `requested_size` is the request of the allocation that last freed into it:
//     a freed block absorbs its free neighbours and keeps its own request (try_merge_blocks); an
//     allocation that splits a free block takes a new object for itself and leaves the free
//     block, its request unchanged, after it (alloc_found_block); a new segment is one free
//     block asking 0; an expandable segment's newly mapped pages are the unmapped block's object
//     (its request), the pages after them a new one (map_block), and unmapping a free block keeps
//     its object for the unmapped pages, new ones (0) for the mapped pages around them
//     (unmap_block);
//   - a segment's `frames` are those of the cudaMalloc (or the first mapping of an expandable
//     segment's start) only while its first block is that original object: the first allocation
//     that splits it at the segment's start gives the segment a first block with none, for good.
// Blocks merge only within their segment (cudaMalloc can hand out adjacent ranges).
#pragma once

#include <cstdint>
#include <map>

namespace vt::analyzer {

class TorchFreeBlocks {
 public:
  // A cudaMalloc'd segment (its stack: the segment's frames while its first block is unsplit), and
  // its cudaFree.
  void segment_alloc(uint64_t addr, uint64_t size, uint32_t stack);
  void segment_free(uint64_t addr);
  // An expandable segment: the reservation, the pages mapped into it and unmapped from it.
  void reservation(uint64_t addr, uint64_t size);
  void reservation_free(uint64_t addr);
  void map(uint64_t addr, uint64_t size, uint32_t stack);
  void unmap(uint64_t addr, uint64_t size);
  // A block handed out, and one taken back with the request it was handed out for.
  void alloc(uint64_t addr, uint64_t size);
  void free(uint64_t addr, uint64_t size, uint64_t requested);

  // At the end: the `requested_size` of the free block at `addr` (0 when none is known there), and
  // the stack of the segment whose mapped range starts at `addr` (0: PyTorch gives it no frames).
  uint64_t free_requested(uint64_t addr) const;
  uint32_t segment_stack(uint64_t addr) const;

 private:
  struct Piece {
    uint64_t size = 0, requested = 0;
  };
  struct Segment {
    uint64_t end = 0;
    bool expandable = false;
    uint32_t stack = 0;       // the frames of its first block, while that block is the original
    bool has_stack = false;
  };
  using Pieces = std::map<uint64_t, Piece>;

  Segment* segment_of(uint64_t addr, uint64_t* start);
  // Inserts [addr, addr + p.size) into `pieces` and merges the pieces of the same segment beside
  // it into it: the new one's request wins, as the Block that absorbs its neighbours.
  static void insert_merged(Pieces& pieces, uint64_t addr, Piece p, uint64_t seg_lo, uint64_t seg_hi);
  static Pieces::iterator containing(Pieces& pieces, uint64_t addr);
  static void erase_range(Pieces& pieces, uint64_t lo, uint64_t hi);

  std::map<uint64_t, Segment> segments_;  // start -> segment (or reservation)
  Pieces free_;      // mapped free blocks
  Pieces unmapped_;  // an expandable segment's unmapped blocks
};

}  // namespace vt::analyzer
