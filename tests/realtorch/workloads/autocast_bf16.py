"""Mixed precision: the forward pass under torch.autocast to bfloat16 (master weights in float32)."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(512, 1024, device="cuda")
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        out = model(x)
        loss = out.float().pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
