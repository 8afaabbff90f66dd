"""Train a small MLP with AdamW: the everyday loop (forward, loss, backward, step, zero_grad)."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(),
                      nn.Linear(4096, 10)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
loss_fn = nn.CrossEntropyLoss()
mark("model on the GPU")

for step in range(4):
    inputs = torch.randn(256, 1024, device="cuda")
    labels = torch.randint(0, 10, (256,), device="cuda")
    loss = loss_fn(model(inputs), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
print("final loss", loss.item())
