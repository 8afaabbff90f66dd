"""Tensors of mixed sizes and lifetimes (small, 1-10 MiB, large), allocated and freed in a seeded
random order, as a data pipeline with caches does: the splitting, merging and oversize rules of the
caching allocator all come into play. Ends with one large request sized from the device's free
memory at the start. A workload of `vramtrace whatif`'s check."""
import random

import torch

free, total = torch.cuda.mem_get_info()
rng = random.Random(11)
live = []
for i in range(1500):
    kind = rng.random()
    if kind < 0.5:
        size = rng.randrange(1, 1 << 20)
    elif kind < 0.85:
        size = rng.randrange(1 << 20, 10 << 20)
    else:
        size = rng.randrange(10 << 20, 96 << 20)
    live.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
    while sum(t.numel() for t in live) > free * 0.4 or (live and rng.random() < 0.45):
        live.pop(rng.randrange(len(live)))
table = torch.empty(int(free * 0.5) >> 20 << 20, dtype=torch.uint8, device="cuda")
