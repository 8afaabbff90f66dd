"""A live-set OOM: the batch is too large for the device. Activations of a deep MLP are kept for
backward; at batch 8192 they no longer fit. (Run with FAKECUDA_TOTAL_BYTES=3GiB.)"""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
layers = []
for _ in range(12):
    layers += [nn.Linear(4096, 4096), nn.ReLU()]
model = nn.Sequential(*layers).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
mark("model on the GPU")
for batch_size in (1024, 8192):
    x = torch.randn(batch_size, 4096, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"batch {batch_size}")
