"""Framework workloads for tests/gpu/device_run.sh: python3 frameworks.py torch|cupy|cupy-async|jax.
Each allocates known sizes and (torch) provokes an OOM; device_run.sh checks the traces."""
import os
import sys

mode = sys.argv[1]
if mode == "torch":
    import torch
    x = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")   # 64 MiB
    y = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")
    del y
    pinned = torch.empty(16 << 20, dtype=torch.uint8).pin_memory()
    try:
        torch.empty(1 << 42, dtype=torch.uint8, device="cuda")    # 4 TiB
    except torch.OutOfMemoryError:
        print("oom as expected")
    torch.cuda.synchronize()
elif mode == "cupy":
    import cupy
    a = cupy.empty(64 << 20, dtype=cupy.uint8)
    del a
elif mode == "cupy-async":
    import cupy
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
    a = cupy.empty(64 << 20, dtype=cupy.uint8)
    del a
    cupy.cuda.Device().synchronize()
elif mode == "jax":
    import jax.numpy as jnp
    a = jnp.zeros((16 << 20,), dtype=jnp.float32)
    a.block_until_ready()
print("done", mode)
