"""The cost of a PyTorch block event (issue 13 target: <= 1 us added with Python frames): malloc/free
pairs of a cached block in the stand-in caching allocator (tests/torch/fake_c10_cuda.cpp: block
events only, no driver call), made from the bottom of exactly 32 Python frames through ctypes.CDLL
(GIL released, like PyTorch). Run with and without libvramtrace.so preloaded
(bench/run_torch_bench.sh): the difference / 2 is what one block event adds.

Usage: python3 bench/torch_block_bench.py LIBDIR time PAIRS BATCHES   -> one line of figures
       python3 bench/torch_block_bench.py LIBDIR loop PAIRS           -> just the loop (callgrind)
"""
import ctypes
import os
import statistics
import sys

lib = ctypes.CDLL(os.path.join(sys.argv[1], "libc10_cuda.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
lib.fc10_bench_time.restype = ctypes.c_double
lib.fc10_bench_time.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
lib.fc10_bench_loop.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
MODE, PAIRS = sys.argv[2], int(sys.argv[3])
BATCHES = int(sys.argv[4]) if len(sys.argv) > 4 else 1
DEPTH = 29  # f0..f28, plus the lambda, run() and the module frame: 32 Python frames at the call
SIZE = 1 << 20

NS = {}
exec("".join("def f%d(fn):\n    return %s\n" % (i, "f%d(fn)" % (i + 1) if i < DEPTH - 1 else "fn()")
             for i in range(DEPTH)), NS)


def frames_here():
    n, f = 0, sys._getframe()
    while f:
        n, f = n + 1, f.f_back
    return n


def run():
    if lib.fc10_init(1) != 0:
        sys.exit("torch_block_bench: driver setup failed")
    depth = NS["f0"](lambda: frames_here() - 1)
    if depth != 32:
        sys.exit("torch_block_bench: expected 32 Python frames at the call, found %d" % depth)
    if MODE == "loop":
        return NS["f0"](lambda: lib.fc10_bench_loop(0, SIZE, PAIRS))
    NS["f0"](lambda: lib.fc10_bench_time(0, SIZE, PAIRS))  # warm up: the segment, the first stacks
    per_pair = []
    for _ in range(BATCHES):
        per_pair.append(NS["f0"](lambda: lib.fc10_bench_time(0, SIZE, PAIRS)) / PAIRS)
    if min(per_pair) < 0:
        sys.exit("torch_block_bench: an allocation failed")
    print("%d batches of %d pairs: median %.1f ns/pair, best %.1f ns/pair (thread CPU time)"
          % (BATCHES, PAIRS, statistics.median(per_pair), min(per_pair)))
    return 0


sys.exit(run())
