"""CUDA memory live in every interpreter of the CPython suite run (tests/cpython_suite/run.py):
each Python process, the test runner's children included, makes a context and keeps 1 MiB on
the simulated driver at start-up, so vramtrace has a trace, its descriptors and its threads in
every one of them. Only when VT_CUDA_EVERYWHERE is set."""
import os

if os.environ.get("VT_CUDA_EVERYWHERE"):
    import ctypes

    try:
        _cu = ctypes.CDLL("libcuda.so.1")
        _dev = ctypes.c_int()
        _ctx = ctypes.c_void_p()
        _ptr = ctypes.c_uint64()
        if (_cu.cuInit(0) == 0 and _cu.cuDeviceGet(ctypes.byref(_dev), 0) == 0
                and _cu.cuDevicePrimaryCtxRetain(ctypes.byref(_ctx), _dev) == 0
                and _cu.cuCtxSetCurrent(_ctx) == 0):
            _cu.cuMemAlloc_v2(ctypes.byref(_ptr), 1 << 20)
    except OSError:
        pass
