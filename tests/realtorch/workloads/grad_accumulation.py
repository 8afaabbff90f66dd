"""Gradient accumulation: four micro-batches per optimizer step (a large batch that would not fit
in one go), the loss scaled by the number of micro-batches."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 100)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
accumulation_steps = 4
for step in range(2):
    for micro in range(accumulation_steps):
        x = torch.randn(128, 2048, device="cuda")
        y = torch.randint(0, 100, (128,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y) / accumulation_steps
        loss.backward()
        mark(f"step {step} micro-batch {micro}")
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
