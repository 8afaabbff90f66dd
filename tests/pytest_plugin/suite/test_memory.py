"""A small suite for the plugin test: allocations through the simulated driver (ctypes)."""
import ctypes

import pytest

MiB = 1 << 20
_cuda = None


def cuda():
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
        _cuda.cuInit(0)
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        _cuda.cuDeviceGet(ctypes.byref(dev), 0)
        _cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        _cuda.cuCtxSetCurrent(ctx)
    return _cuda


def alloc_and_free(n):
    p = ctypes.c_uint64()
    assert cuda().cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    assert cuda().cuMemFree_v2(p) == 0


@pytest.mark.limit_vram("100 MiB")
def test_under_limit():
    alloc_and_free(10 * MiB)


@pytest.mark.limit_vram("100 MiB")
def test_over_limit():
    alloc_and_free(200 * MiB)


def test_unmarked():
    alloc_and_free(1 * MiB)
