"""Another process holds memory on the same GPU (a second job, a notebook left open): this one runs
out although its own tensors are modest. The runner starts that process (on a GPU a real one; on
the simulated device the driver and NVML account for it: FAKECUDA_FOREIGN_BYTES,
FAKENVML_PROCESSES). Sized from what is free: the step needs more than that."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
width = 4096
model = nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, width)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
mark("model on the GPU")
free, _ = torch.cuda.mem_get_info()
batch = int(free * 0.3) // (2 * width * 4)  # the hidden activation: 30% of what is free
for step in range(3):
    x = torch.randn(batch, width, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
