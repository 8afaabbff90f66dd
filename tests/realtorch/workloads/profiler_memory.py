"""torch.profiler with profile_memory=True around a few training steps: its memory events come from
the same calls vramtrace intercepts (and forwards). Prints the CUDA memory events it recorded."""
import json
import os

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    for step in range(2):
        loss = model(torch.randn(64, 512, device="cuda")).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
mark("after profiling")
# The profiler's raw memory records: one per block handed out or taken back, with its size.
memory = [(str(e.device_type()), e.device_index(), e.nbytes())
          for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
cuda = [m for m in memory if m[0].endswith("CUDA")]
by_op = [(f.name, f.device_memory_usage) for f in prof.events() if f.device_memory_usage]
summary = {"cuda_memory_events": len(cuda), "cuda_bytes_allocated": sum(n for _, _, n in cuda if n > 0),
           "cuda_bytes_freed": -sum(n for _, _, n in cuda if n < 0), "sizes": [n for _, _, n in cuda],
           "ops": sorted({name for name, _ in by_op})}
print("profiler:", json.dumps(summary))
out = os.environ.get("VT_RT_OUT")
if out:
    with open(os.path.join(out, "profiler.json"), "w") as f:
        json.dump(summary, f)
