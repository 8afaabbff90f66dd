"""A run for the snapshot export's oracle (torch_snapshot_check.py): PyTorch records its own history
(stacks="python"); the run allocates small and large tensors (some on a side stream), frees some,
flushes the cache, runs out
of memory once, dumps torch.cuda.memory._snapshot() to argv[1], then is SIGKILLed: vramtrace's trace
ends at the kill, and its export must be PyTorch's snapshot of that moment."""
import os
import pickle
import signal
import sys

import torch

torch.cuda.memory._record_memory_history(stacks="python", max_entries=1_000_000)


def layer(n, width):
    return [torch.empty(width, device="cuda") for _ in range(n)]


def step(x):
    h = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # a large block in a 20 MiB segment
    y = x * 2
    del h
    return y


small = layer(8, 1000)       # the small pool: 2 MiB segments
x = torch.empty(4 << 20, device="cuda")
kept = [step(x) for _ in range(3)]
side = torch.cuda.Stream()   # PyTorch's pools are per stream: these open segments of that stream's
with torch.cuda.stream(side):
    on_side = [torch.empty(5 << 20, dtype=torch.uint8, device="cuda"), torch.empty(3000, device="cuda")]
    del on_side[0]
del small[::2]
big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
del big
torch.cuda.empty_cache()     # segment_free of the empty segments
try:
    torch.empty(64 << 30, dtype=torch.uint8, device="cuda")  # more than the simulated 16 GiB
except torch.OutOfMemoryError:
    pass
tail = torch.empty(12 << 20, dtype=torch.uint8, device="cuda")
# Memory PyTorch cannot see: a library that takes it from the driver itself (tests/realtorch/outside_library.c).
if os.environ.get("VT_OUTSIDE_BYTES"):
    import ctypes
    assert ctypes.CDLL(os.environ["VT_RT_OUTSIDE_LIBRARY"]).vt_outside_reserve(ctypes.c_size_t(int(os.environ["VT_OUTSIDE_BYTES"]))) == 0
with open(sys.argv[1], "wb") as f:
    pickle.dump(torch.cuda.memory._snapshot(), f)
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
