"""Evaluation between training phases, then torch.cuda.empty_cache(): the cached segments go back
to the driver, the live tensors (the model) stay."""
import torch
from torch import nn

from vt_marks import mark

model = nn.Sequential(nn.Linear(2048, 8192), nn.ReLU(), nn.Linear(8192, 2048)).cuda()
with torch.no_grad():
    for _ in range(3):
        out = model(torch.randn(2048, 2048, device="cuda"))
del out
mark("after evaluation")
torch.cuda.empty_cache()
mark("after empty_cache")
big = torch.empty(300 << 20, dtype=torch.uint8, device="cuda")
mark("after a new allocation")
