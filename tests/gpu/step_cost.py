"""The cost of a training step (tests/gpu/device_run.sh, section measure): ms per step of an
8-layer MLP with SGD, after 30 warm-up steps, written as JSON to argv[1]; run plain and under
vramtrace, interleaved, and the medians compared."""
import json
import sys
import time

import torch

model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(8)]).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(512, 4096, device="cuda")
for i in range(230):
    if i == 30:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
    model(x).square().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
json.dump({"ms_per_step": (time.perf_counter() - t0) * 1000 / 200}, open(sys.argv[1], "w"))
