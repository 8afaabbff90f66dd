"""Memory outside PyTorch: a communication library (here a small C library standing in for one,
loaded with ctypes as extensions are) reserves its buffers straight from the driver; PyTorch's
training then runs out although its own tensors would fit. Sized from the device: the library
takes 60% of the free memory, the step needs more than what is left. (VT_RT_OUTSIDE_LIBRARY names
the library.)"""
import ctypes
import os

import torch
from torch import nn

from vt_marks import mark

comm = ctypes.CDLL(os.environ["VT_RT_OUTSIDE_LIBRARY"])
comm.vt_outside_reserve.argtypes = [ctypes.c_size_t]
torch.empty(1, device="cuda")  # the context, as any first CUDA call makes it
free, _ = torch.cuda.mem_get_info()
assert comm.vt_outside_reserve(int(free * 0.6) >> 20 << 20) == 0  # the library's buffers
mark("library buffers reserved")
width = 4096
model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)).cuda()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
free, _ = torch.cuda.mem_get_info()
batch = int(free * 0.3) // (width * 4)  # each activation of the step: 30% of what is left
for step in range(3):
    x = torch.randn(batch, width, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
