"""torch.cuda.set_per_process_memory_fraction: a job that shares the GPU caps itself at a quarter of
it, then asks for more than its share (an OOM with free memory on the device). Sized from the
device."""
import torch

from vt_marks import mark

torch.cuda.set_per_process_memory_fraction(0.25)
_, total = torch.cuda.mem_get_info()
chunk = 512 << 20
kept = [torch.empty(chunk, dtype=torch.uint8, device="cuda") for _ in range(int(total * 0.2) // chunk)]
mark("within the fraction")
try:
    more = torch.empty(int(total * 0.1) >> 20 << 20, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError as e:
    print(e)
mark("after the refused request")
