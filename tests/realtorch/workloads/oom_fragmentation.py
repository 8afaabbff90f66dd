"""A fragmentation OOM: a data pipeline keeps every third 6 MiB batch buffer (for logging), so
every 20 MiB segment of the cache stays pinned by one; 2/3 of the cache is free, yet a large
request cannot be placed, and the cache flush on the retry cannot release a segment that still
holds a tensor. Sized from the device's free memory (a 2 GiB simulated one, or a real GPU)."""
import torch

from vt_marks import mark

free, total = torch.cuda.mem_get_info()
count = int(free * 0.5) // (20 << 20) * 3  # three 6 MiB buffers per 20 MiB segment: half the free memory
buffers = [torch.empty(6 << 20, dtype=torch.uint8, device="cuda") for _ in range(count)]
mark("buffers filled")
kept = buffers[::3]
del buffers
mark("two thirds freed")
# More than the half of the free memory the cache left (its 20 MiB segments hold three 6 MiB
# buffers and 2 MiB of tail each), less than that and the free space between the kept buffers;
# under expandable_segments:True (no tails: 10% less reserved, the remedy) it fits.
embedding_table = torch.empty(int(free * 0.53) >> 20 << 20, dtype=torch.uint8, device="cuda")
