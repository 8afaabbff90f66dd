"""An MLP trained with AdamW for a few steps at the batch size BATCH (environment), with gradient
accumulation over two micro-batches: a workload of `vramtrace fit`'s check (fit_check.py)."""
import os

import torch
from torch import nn

BATCH = int(os.environ.get("BATCH", "8"))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    for micro in range(2):
        x = torch.randn(BATCH, 2048, device="cuda")
        y = torch.randint(0, 1000, (BATCH,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y) / 2
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
