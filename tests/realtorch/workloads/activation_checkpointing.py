"""Activation checkpointing: each block's activations are recomputed in backward instead of kept."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from vt_marks import mark

torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 2048)) for _ in range(4)).cuda()
optimizer = torch.optim.SGD(blocks.parameters(), lr=0.01, momentum=0.9)


def forward(x):
    for block in blocks:
        x = x + checkpoint(block, x, use_reentrant=False)
    return x


for step in range(3):
    x = torch.randn(512, 2048, device="cuda", requires_grad=True)
    loss = forward(x).pow(2).mean()
    mark(f"step {step} after forward")
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
