"""Another process holds memory on the same GPU (a second job, a notebook left open): this one runs
out although its own tensors are modest. The runner starts that process and makes the simulated
driver and NVML account for it (FAKECUDA_FOREIGN_BYTES, FAKENVML_PROCESSES). (3 GiB device.)"""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4096, 8192), nn.ReLU(), nn.Linear(8192, 4096)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
mark("model on the GPU")
for step in range(3):
    x = torch.randn(4096, 4096, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
