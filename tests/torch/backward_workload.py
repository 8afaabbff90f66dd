"""loss.backward() without PyTorch: the stand-in engine (fake_autograd_engine.cpp) runs backward
on a worker thread with a Python thread state and no frames, called the way libtorch_python.so
calls it (fake_autograd_python.cpp). Writes, for each allocation the worker made, the Python line
its event must name (the line that entered the engine) or None (no line may be lent), to a JSON
file that check_backward.py checks against the trace.

    python3 backward_workload.py TORCH_TEST_DIR OUT.json"""
import ctypes
import json
import os
import sys
import threading

libdir, out_path = sys.argv[1:3]
MiB = 1 << 20
mode = os.RTLD_LOCAL | os.RTLD_NOW
C10 = ctypes.CDLL(os.path.join(libdir, "default", "libc10_cuda.so"), mode=mode)
ENG = ctypes.CDLL(os.path.join(libdir, "autograd", "libtorch_cpu.so"), mode=mode)
PY = ctypes.CDLL(os.path.join(libdir, "autograd", "libtorch_python.so"), mode=mode)
ENG.fae_set_size.argtypes = [ctypes.c_uint64]
ENG.fae_worker_alloc.argtypes = [ctypes.c_uint64]
ENG.fae_worker_alloc.restype = ctypes.c_uint64
ENG.fae_last_alloc.restype = ctypes.c_uint64
ENG.fae_worker_tid.restype = ctypes.c_long
PY.fap_run_backward.restype = ctypes.c_uint64
assert C10.fc10_init(1) == 0
expect = {"lent": {}, "none": []}


def here(offset=0):
    f = sys._getframe(1)
    return [f.f_code.co_filename, f.f_lineno + offset, getattr(f.f_code, "co_qualname", f.f_code.co_name)]


def lent(addr, where):
    """The worker's allocation `addr` must carry the caller's frames: innermost `where`, outermost
    the caller's outermost (the module, or threading's bootstrap on another thread)."""
    assert addr > 1, "the engine made no allocation"
    f = sys._getframe(1)
    while f.f_back:
        f = f.f_back
    expect["lent"][str(addr)] = where + [f.f_code.co_name]


def step(size):
    ENG.fae_set_size(size)
    p = PY.fap_run_backward(0)                  # loss.backward()
    lent(p, here(-1))
    expect.setdefault("peak_line", here(-2))    # the first step's 64 MiB holds the peak


def inner_backward():
    ENG.fae_set_size(2 * MiB)
    q = PY.fap_run_backward(0)                  # autograd.grad inside a custom backward
    lent(q, here(-1))


CALLBACK = ctypes.CFUNCTYPE(None)(inner_backward)


def nested_step():
    ENG.fae_set_size(3 * MiB)
    ENG.fae_set_callback(CALLBACK)
    p = PY.fap_run_backward(0)                  # the outer call: its frames are lent again after the inner one
    lent(p, here(-1))


def raising_step():
    ENG.fae_set_size(5 * MiB)
    r = PY.fap_run_backward(1)                  # raises out of the engine (an OOM in backward)
    assert r == 0
    lent(ENG.fae_last_alloc(), here(-2))


def stale_probe():                              # called at raising_step's depth: the same frame address
    expect["none"].append(str(ENG.fae_worker_alloc(7 * MiB)))


def outside():
    expect["none"].append(str(ENG.fae_worker_alloc(11 * MiB)))


def oom_step():
    ENG.fae_set_size(1 << 40)
    p = PY.fap_run_backward(0)                  # more than the device has: PyTorch's OOM in backward
    assert p == 0
    expect["oom_line"] = here(-2)


def from_thread():
    ENG.fae_set_size(13 * MiB)
    p = PY.fap_run_backward(0)                  # backward from another thread (as Ray Train runs the loop)
    lent(p, here(-1))


def second_backward():
    ENG.fae_set_size(17 * MiB)
    expect["none"].append(str(PY.fap_run_backward(0)))  # two threads in the engine: either's, so none


def first_backward_waits():
    t = threading.Thread(target=second_backward)
    t.start()
    t.join()


WAITS = ctypes.CFUNCTYPE(None)(first_backward_waits)


def concurrent_step():
    ENG.fae_set_size(19 * MiB)
    ENG.fae_set_callback(WAITS)                 # inside the engine, another thread runs backward
    p = PY.fap_run_backward(0)                  # then this one's worker allocates: its frames again
    lent(p, here(-1))


step(64 * MiB)
outside()
nested_step()
raising_step()
stale_probe()
t = threading.Thread(target=from_thread)
t.start()
t.join()
concurrent_step()
step(1 * MiB)
oom_step()
expect["worker_tid"] = ENG.fae_worker_tid()
json.dump(expect, open(out_path, "w"))
print("backward workload done")
