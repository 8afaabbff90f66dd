"""Inference under torch.no_grad(): no activations are kept, so memory stays flat batch after batch."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000)).cuda()
model.eval()
predictions = []
with torch.no_grad():
    for batch in range(4):
        x = torch.randn(1024, 1024, device="cuda")
        predictions.append(model(x).argmax(dim=1))
        mark(f"after batch {batch}")
