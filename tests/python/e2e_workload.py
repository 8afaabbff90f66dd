"""Allocations through the simulated driver from known Python lines, for the end-to-end stack test
(e2e_check.py). Each case uses a distinct size; expectations go to argv[1] as JSON:
{size: [file, line, function]} for the innermost Python frame, or null for "no Python frame";
"library": {"size", "caller": [file name, line, function]} for the allocation made inside an
installed library, whose caller's line the report must name; "deep": {"size", "frames"} for the
two innermost Python frames of an allocation made below twelve C-to-Python callbacks."""
import asyncio
import ctypes
import gc
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
cuda = ctypes.CDLL("libcuda.so.1")          # releases the GIL around calls, like PyTorch
cuda_gil = ctypes.PyDLL("libcuda.so.1")     # keeps the GIL
helper = ctypes.CDLL(sys.argv[2])
helper_gil = ctypes.PyDLL(sys.argv[2])
expect = {}
MiB = 1 << 20
QUALNAMES = sys.version_info >= (3, 11)     # 3.10 code objects carry co_name only


def expect_next_line(size, name):
    """The allocation of `size` is made on the caller's next line, by function `name`."""
    f = sys._getframe(1)
    expect[size] = [f.f_code.co_filename, f.f_lineno + 1, name]
    return ctypes.c_uint64()


def plain_function():
    p = expect_next_line(1 * MiB, "plain_function")
    return cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 * MiB))


class Outer:
    class Inner:
        def method(self):
            p = expect_next_line(2 * MiB, "Outer.Inner.method" if QUALNAMES else "method")
            return cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(2 * MiB))


def generator():
    p = expect_next_line(3 * MiB, "generator")
    yield cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(3 * MiB))


async def coroutine():
    await asyncio.sleep(0)
    p = expect_next_line(4 * MiB, "coroutine")
    return cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4 * MiB))


def in_thread():
    p = expect_next_line(5 * MiB, "in_thread")
    cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(5 * MiB))


def through_a_library():
    """64 MiB made inside an installed library (never freed: the largest holder at the peak)."""
    import vt_fakelib
    f = sys._getframe()
    expect["library"] = {"size": 64 * MiB, "caller": [os.path.basename(f.f_code.co_filename), f.f_lineno + 2,
                                                      "through_a_library"]}
    return vt_fakelib.allocate(cuda, 64 * MiB)


def deep_leaf():
    f = sys._getframe()
    expect["deep"] = {"size": 9 * MiB, "frames": [[f.f_code.co_filename, f.f_lineno + 3, "deep_leaf"],
                                                  [__file__, DEEP_CALL_LINE, "deep"]]}
    p = ctypes.c_uint64()
    return cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(9 * MiB))


def deep(n):
    """Twelve levels where C (sorted) calls back into Python: more eval loops than the native
    stack's 64 frames hold, so the outer Python frames outlive the native ones."""
    if n == 0:
        return deep_leaf()
    return sorted([n], key=lambda x: deep(n - 1))


DEEP_CALL_LINE = deep.__code__.co_firstlineno + 4  # the `return deep_leaf()` line


def with_gil_held():
    p = expect_next_line(6 * MiB, "with_gil_held")
    return cuda_gil.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(6 * MiB))


def main():
    cuda.cuInit(0)
    dev = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    ctx = ctypes.c_void_p()
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    cuda.cuCtxSetCurrent(ctx)

    plain_function()
    Outer.Inner().method()
    list(generator())
    asyncio.run(coroutine())
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    with_gil_held()
    through_a_library()
    deep(12)
    helper.c_thread_alloc()                 # 7 MiB from a plain C thread: no Python frames
    expect[7 * MiB] = None

    # Deadlock probe: a thread allocates under a mutex (GIL released); this thread, holding the
    # GIL, waits for the mutex. Taking the GIL inside the hook would hang here.
    helper.locked_alloc.argtypes = [ctypes.c_size_t]
    t = threading.Thread(target=lambda: helper.locked_alloc(8 * MiB))
    t.start()
    import time
    time.sleep(0.02)
    helper_gil.wait_for_lock()
    t.join()
    expect[8 * MiB] = [__file__, None, "main.<locals>.<lambda>" if QUALNAMES else "<lambda>"]

    # Stress: frames change under other threads' feet while we allocate.
    stop = False

    def disturb():
        while not stop:
            sys._current_frames()
            gc.collect()

    d = threading.Thread(target=disturb)
    d.start()
    for i in range(3000):
        p = ctypes.c_uint64()
        cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(4096))
        cuda.cuMemFree_v2(p)
    stop = True
    d.join()

    with open(sys.argv[1], "w") as f:
        json.dump({str(k): v for k, v in expect.items()}, f)


main()

# The opt-in self-test of the walker, from Python with the GIL held (PyDLL keeps it).
selftest = ctypes.PyDLL(None).vramtrace_python_self_test
if selftest() != 1:
    raise SystemExit("vramtrace_python_self_test failed")
