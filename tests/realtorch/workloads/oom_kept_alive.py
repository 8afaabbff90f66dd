"""Tensors kept alive across iterations: every step's output is appended to a list "for the
metrics later", with its autograd graph, so the memory of each step stays; the device runs out
after a few dozen steps. (Run with FAKECUDA_TOTAL_BYTES=3GiB.)"""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
outputs = []
for step in range(200):
    x = torch.randn(1024, 2048, device="cuda")
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    outputs.append(out)  # kept for metrics: the tensor (16 MiB) stays alive, every step
    if step % 10 == 0:
        mark(f"after step {step}")
