"""Two OOMs (issue 37, the HTML page's order and its tensor timeline at each): a request too large
for what is left is caught (PyTorch frees its cache and retries first: num_alloc_retries 1), the
program goes on, and a later one ends it. The page must show the last first, and at each OOM the
allocated of PyTorch's message. Sized from the device (a 2 GiB simulated one, or a real GPU)."""
import torch

from vt_marks import mark

free, total = torch.cuda.mem_get_info()
keep = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(int(free * 0.4) // (64 << 20))]
tmp = [torch.empty(16 << 20, dtype=torch.uint8, device="cuda") for _ in range(20)]
del tmp  # cached: the failing request's flush frees them before its retry
mark("filled")
try:
    big = torch.empty(int(free * 0.7) >> 20 << 20, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError as e:
    print("caught:", e, flush=True)
mark("after the caught OOM")
half = torch.empty(int(free * 0.3) >> 20 << 20, dtype=torch.uint8, device="cuda")
mark("half taken")
big = torch.empty(int(free * 0.5) >> 20 << 20, dtype=torch.uint8, device="cuda")
