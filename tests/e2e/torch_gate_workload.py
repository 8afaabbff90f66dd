"""A PyTorch-shaped run for `vramtrace check` and `diff` (tests/e2e/gate_test.cpp), without PyTorch:
drives the stand-in caching allocator (tests/torch/fake_c10_cuda.cpp) through ctypes, as
tests/torch/torch_workload.py does, and prints its own peaks (JSON: peak_allocated, peak_reserved,
as memory_stats() counts them) for the test to compare with the report.

    python3 torch_gate_workload.py LIBDIR SCALE [user_pinned] [leak_tensor]

SCALE multiplies the tensors' sizes. Every run also takes 4 bytes of pinned host memory through
the stand-in's CachingHostAllocator (PyTorch's host cache: kept until exit, never freed) and
16 MiB of device memory outside PyTorch (cuMemAlloc from here, freed before the end), so the
driver's peak is above PyTorch's reserved. `user_pinned`: 4 KiB of pinned host memory of the
program's own (cuMemHostAlloc from here), never freed: a leak. `leak_tensor`: a 1 MiB tensor
still allocated at the end."""
import ctypes
import json
import os
import sys

libdir, scale = sys.argv[1], int(sys.argv[2])
flags = set(sys.argv[3:])
MiB = 1 << 20
lib = ctypes.CDLL(os.path.join(libdir, "libc10_cuda.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
lib.fc10_malloc.restype = ctypes.c_uint64
lib.fc10_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_free.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_host_alloc.restype = ctypes.c_uint64
lib.fc10_host_alloc.argtypes = [ctypes.c_uint64]
cuda = ctypes.CDLL("libcuda.so.1")
if lib.fc10_init(1) != 0:
    sys.exit("fc10_init failed")

peaks = {"peak_allocated": 0, "peak_reserved": 0}


def after_malloc():
    out = (ctypes.c_uint64 * 6)()
    lib.fc10_stats(0, out)
    peaks["peak_allocated"] = max(peaks["peak_allocated"], out[0])
    peaks["peak_reserved"] = max(peaks["peak_reserved"], out[1])


def malloc(size):
    p = lib.fc10_malloc(0, size)
    if not p:
        sys.exit(f"fc10_malloc({size}) failed")
    after_malloc()
    return p


weights = malloc(40 * MiB * scale)  # (makes the device's context current, for the calls below)
# Outside PyTorch: a library's own device memory, freed before the end.
outside = ctypes.c_uint64()
if cuda.cuMemAlloc_v2(ctypes.byref(outside), ctypes.c_size_t(16 * MiB)) != 0:
    sys.exit("cuMemAlloc failed")
activations = malloc(24 * MiB * scale)
lib.fc10_free(0, activations)
grads = malloc(30 * MiB * scale)  # (the cached 24 MiB do not fit: a new segment, reserved > allocated)
if not lib.fc10_host_alloc(4):  # PyTorch's pinned host cache: kept until exit
    sys.exit("fc10_host_alloc failed")
if "user_pinned" in flags:  # the program's own pinned memory, never freed
    mine = ctypes.c_void_p()
    if cuda.cuMemHostAlloc(ctypes.byref(mine), ctypes.c_size_t(4096), 0) != 0:
        sys.exit("cuMemHostAlloc failed")
lib.fc10_free(0, grads)
lib.fc10_free(0, weights)
if "leak_tensor" in flags:
    malloc(MiB)
cuda.cuMemFree_v2(outside)
print(json.dumps(peaks))
