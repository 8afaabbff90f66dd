"""A small transformer trained with AdamW for a few steps at the batch size BATCH (environment):
the workload `vramtrace fit`'s check runs at several batch sizes (tests/realtorch/fit/fit_check.py)."""
import os

import torch
from torch import nn

BATCH = int(os.environ.get("BATCH", "8"))


class Block(nn.Module):
    def __init__(self, d_model=256, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(4000, 256), Block(), Block(), nn.LayerNorm(256), nn.Linear(256, 4000)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(3):
    tokens = torch.randint(0, 4000, (BATCH, 128), device="cuda")
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.view(-1, 4000), tokens.view(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
