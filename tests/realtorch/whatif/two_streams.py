"""A data loader's side stream beside the training stream: tensors of mixed sizes allocated in a
seeded random order on the default stream and on a side stream (`with torch.cuda.stream(s)`), each
freed later on its own stream's turn. PyTorch's caching allocator keeps a pool per stream: a block
cached for one stream never serves the other, so the two streams fragment the device between them.
Ends with one large request sized from the device's free memory at the start. A workload of
`vramtrace whatif`'s check (its model keeps the pools per stream too)."""
import random

import torch

free, total = torch.cuda.mem_get_info()
rng = random.Random(5)
side = torch.cuda.Stream()
live = {0: [], 1: []}
for i in range(1200):
    which = rng.randrange(2)
    kind = rng.random()
    if kind < 0.45:
        size = rng.randrange(1, 1 << 20)
    elif kind < 0.85:
        size = rng.randrange(1 << 20, 10 << 20)
    else:
        size = rng.randrange(10 << 20, 64 << 20)
    with torch.cuda.stream(side if which else torch.cuda.default_stream()):
        live[which].append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        while sum(t.numel() for t in live[which]) > free * 0.2 or (live[which] and rng.random() < 0.45):
            live[which].pop(rng.randrange(len(live[which])))
table = torch.empty(int(free * 0.45) >> 20 << 20, dtype=torch.uint8, device="cuda")
