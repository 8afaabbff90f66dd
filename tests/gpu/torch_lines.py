"""A training-like PyTorch script for tests/gpu/device_run.sh: the big activation is allocated on a known
line (printed as EXPECT file:line), whatever the allocator mode (PYTORCH_CUDA_ALLOC_CONF)."""
import sys

import torch

model = torch.nn.Linear(4096, 4096).cuda()
x = torch.randn(64, 4096, device="cuda")
for step in range(3):
    y = model(x)
    big = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")  # the line to attribute
    print(f"EXPECT {__file__}:{sys._getframe().f_lineno - 1}")
    del big, y
torch.cuda.synchronize()
