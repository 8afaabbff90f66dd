"""Two GPUs: the model's first half on cuda:0, its second on cuda:1 (simple model parallelism).
(Run with FAKECUDA_DEVICES=2.)"""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
first = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU()).to("cuda:0")
second = nn.Sequential(nn.Linear(4096, 1024), nn.ReLU(), nn.Linear(1024, 10)).to("cuda:1")
optimizer = torch.optim.Adam(list(first.parameters()) + list(second.parameters()), lr=1e-3)
for step in range(3):
    x = torch.randn(256, 1024, device="cuda:0")
    hidden = first(x).to("cuda:1")
    loss = second(hidden).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
