"""A small CNN (convolutions, batch norm, pooling) trained with cuDNN turned off, as some clusters
do when cuDNN and the driver disagree: PyTorch's own convolution kernels then run."""
import torch
from torch import nn

from vt_marks import mark

torch.backends.cudnn.enabled = False
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(64 * 8 * 8, 10)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    images = torch.randn(64, 3, 32, 32, device="cuda")
    labels = torch.randint(0, 10, (64,), device="cuda")
    loss = nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    mark(f"after step {step}")
