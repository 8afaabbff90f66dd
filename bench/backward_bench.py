"""Block events of PyTorch's autograd worker with and without frames lent (bench/run_backward_bench.sh):
the stand-in engine's worker (tests/torch/fake_autograd_engine.cpp) makes PAIRS malloc/free pairs of
a cached block, inside an engine call entered from DEPTH Python frames (`inside`: the caller's
frames are lent to every event) or outside any (`outside`: none).

    python3 backward_bench.py TORCH_TEST_DIR inside|outside PAIRS [DEPTH]"""
import ctypes
import os
import sys

libdir, mode, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 32
m = os.RTLD_LOCAL | os.RTLD_NOW
C10 = ctypes.CDLL(os.path.join(libdir, "default", "libc10_cuda.so"), mode=m)
ENG = ctypes.CDLL(os.path.join(libdir, "autograd", "libtorch_cpu.so"), mode=m)
PY = ctypes.CDLL(os.path.join(libdir, "autograd", "libtorch_python.so"), mode=m)
for f in (ENG.fae_set_size, ENG.fae_set_pairs, ENG.fae_worker_alloc):
    f.argtypes = [ctypes.c_uint64]
PY.fap_run_backward.restype = ENG.fae_worker_alloc.restype = ctypes.c_uint64
assert C10.fc10_init(1) == 0
ENG.fae_set_size(1 << 20)
ENG.fae_worker_alloc(1 << 20)  # the worker exists and its segment is cached before the measured part
ENG.fae_set_pairs(pairs)


def at_depth(n):
    if n > 1:
        return at_depth(n - 1)
    return PY.fap_run_backward(0) if mode == "inside" else ENG.fae_worker_alloc(1 << 20)


assert at_depth(depth) > 1
