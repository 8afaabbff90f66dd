"""PyTorch's block layer on a real GPU (tests/gpu/run.sh; NOT RUN YET: no GPU machine in the session
that wrote it). Run under `vramtrace run`; writes what the report must say to argv[2] (JSON).

    python3 torch_blocks.py marks|frag|live|profiler|steps OUT.json

marks     torch.cuda.memory_stats() (allocated, reserved, inactive split) at vramtrace regions
frag      a deliberate fragmentation OOM: 20 MiB segments half freed, then a 30 MiB tensor
live      a live-set OOM: tensors kept until the device is full
profiler  torch.profiler(profile_memory=True) still sees memory while vramtrace forwards the calls
steps     ms per training step (run.sh compares with and without vramtrace: <= 2% slower)"""
import ctypes
import json
import sys
import time

import torch

mode, out_path = sys.argv[1], sys.argv[2]
vt = ctypes.CDLL(None)
has_regions = hasattr(vt, "vramtrace_region_begin")
expect = {"mode": mode, "marks": {}, "ooms": []}
MiB = 1 << 20


def mark(name):
    torch.cuda.synchronize()
    if has_regions:
        vt.vramtrace_region_begin(name.encode())
        vt.vramtrace_region_end(name.encode())
    s = torch.cuda.memory_stats()
    expect["marks"][name] = {"allocated": s.get("allocated_bytes.all.current", 0),
                             "reserved": s.get("reserved_bytes.all.current", 0),
                             "inactive_split": s.get("inactive_split_bytes.all.current", 0)}


def oom(fn):
    try:
        fn()
    except torch.OutOfMemoryError as e:
        expect["ooms"].append(str(e))
        return True
    return False


if mode == "marks":
    a = [torch.empty(n * 256 * 1024, dtype=torch.uint8, device="cuda") for n in range(1, 40)]
    mark("many")
    del a[::2]
    mark("holes")
    b = torch.empty(300 * MiB, dtype=torch.uint8, device="cuda")
    mark("big")
    del b
    mark("big_freed")
    torch.cuda.empty_cache()
    mark("emptied")
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).cuda()
    opt = torch.optim.AdamW(model.parameters())
    expect["backward_line"] = ["torch_blocks.py", sys._getframe().f_lineno + 3]
    for step in range(5):
        loss = model(torch.randn(256, 2048, device="cuda")).square().mean()
        loss.backward()                 # the autograd workers' blocks must name this line
        opt.step()
        opt.zero_grad()
        mark(f"step{step}")
elif mode == "frag":
    free, total = torch.cuda.mem_get_info()
    keep = []
    n = int(free * 0.97) // (4 * MiB)
    chunks = [torch.empty(4 * MiB, dtype=torch.uint8, device="cuda") for _ in range(n)]  # 20 MiB segments, 5 each
    keep = chunks[::2]
    del chunks
    mark("fragmented")
    oom(lambda: torch.empty(30 * MiB, dtype=torch.uint8, device="cuda"))
elif mode == "live":
    held = []
    line = sys._getframe().f_lineno + 2
    expect["holder_line"] = f"torch_blocks.py:{line}"
    while not oom(lambda: held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))):
        pass
elif mode == "profiler":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as p:
        x = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
        del x
    usage = 0
    for e in p.key_averages():
        usage += abs(getattr(e, "device_memory_usage", 0) or getattr(e, "cuda_memory_usage", 0) or 0)
    expect["profiler_memory_bytes"] = usage
elif mode == "steps":
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
    expect["ms_per_step"] = (time.perf_counter() - t0) * 1000 / 200
json.dump(expect, open(out_path, "w"), indent=1)
