"""A trace with PyTorch block events for the analysis benchmark (docs/performance-history.md, "The PyTorch
aggregator"): the stand-in caching allocator (tests/torch/fake_c10_cuda.cpp) driven in a training-like
loop (STEPS steps of 20 temporaries of ~2,000 sizes and one kept tensor, the oldest of 2,000 kept
dropped), then PAIRS cached malloc/free pairs. Run under libvramtrace.so:

    LD_LIBRARY_PATH=build/lib/fakecuda LD_PRELOAD=build/lib/libvramtrace.so VRAMTRACE_OUTPUT=T.trace \\
      FAKECUDA_CONTEXT_BYTES=0 python3 bench/gen_torch_blocks.py build/tests/torch/default 22000 250000
"""
import ctypes
import os
import sys

lib = ctypes.CDLL(os.path.join(sys.argv[1], "libc10_cuda.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
lib.fc10_malloc.restype = ctypes.c_uint64
lib.fc10_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_free.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_bench_loop.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
assert lib.fc10_init(1) == 0
M, F = lib.fc10_malloc, lib.fc10_free
# The training-like part: the live set grows and shrinks.
live = []
def step(i):
    acts = [M(0, 512 * (1 + (i * 7 + k) % 2000)) for k in range(20)]
    keep = M(0, 4096)
    live.append(keep)
    for a in acts:
        F(0, a)
    if len(live) > 2000:
        F(0, live.pop(0))
for i in range(int(sys.argv[2])):
    step(i)
lib.fc10_bench_loop(0, 1 << 20, int(sys.argv[3]))
