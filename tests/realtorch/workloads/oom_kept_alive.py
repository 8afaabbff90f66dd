"""Tensors kept alive across iterations: every step's output is appended to a list "for the
metrics later", so the memory of each step stays; the device runs out after a few dozen steps.
Each step keeps about 1/40 of the device (a 3 GiB simulated one, or a real GPU)."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
_, total = torch.cuda.mem_get_info()
batch = max(64, total // 40 // (4096 * 4))
model = nn.Sequential(nn.Linear(2048, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
outputs = []
for step in range(200):
    x = torch.randn(batch, 2048, device="cuda")
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    outputs.append(out)  # kept for metrics: the tensor stays alive, every step
    if step % 10 == 0:
        mark(f"after step {step}")
