"""Batched inference whose sequence length changes from batch to batch (what expandable segments
were made for): each batch's activations are a little larger or smaller than the last, the cache
fills with segments of the old sizes, and every few batches an output is kept. Ends with one large
request sized from the device's free memory at the start. A workload of `vramtrace whatif`'s check."""
import torch

free, total = torch.cuda.mem_get_info()
H = 1024
up = torch.nn.Linear(H, 4 * H, device="cuda")
down = torch.nn.Linear(4 * H, H, device="cuda")
g = torch.Generator().manual_seed(7)
kept = []
with torch.no_grad():
    for step in range(48):
        length = int(torch.randint(64, 1024, (1,), generator=g))
        x = torch.empty(8, length, H, device="cuda")
        y = down(torch.relu(up(x)))
        if step % 6 == 0:
            kept.append(y)
        del x, y
table = torch.empty(int(free * 0.42) >> 20 << 20, dtype=torch.uint8, device="cuda")
