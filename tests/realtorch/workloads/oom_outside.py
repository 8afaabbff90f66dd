"""Memory outside PyTorch: a communication library (here a small C library standing in for one,
loaded with ctypes as extensions are) reserves its buffers straight from the driver; PyTorch's
training then runs out although its own tensors would fit. (Run with FAKECUDA_TOTAL_BYTES=3GiB;
VT_RT_OUTSIDE_LIBRARY names the library.)"""
import ctypes
import os

import torch
from torch import nn

from vt_marks import mark

comm = ctypes.CDLL(os.environ["VT_RT_OUTSIDE_LIBRARY"])
comm.vt_outside_reserve.argtypes = [ctypes.c_size_t]
torch.cuda.init()
torch.empty(1, device="cuda")  # the context, as any first CUDA call makes it
assert comm.vt_outside_reserve(1792 << 20) == 0  # the library's buffers: 1.75 GiB
mark("library buffers reserved")
model = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(8192, 4096, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
