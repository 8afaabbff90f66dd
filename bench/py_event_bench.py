"""The Python part of an event's cost (issue 14): cuMemAllocAsync/cuMemFreeAsync pairs through the
simulated driver from the bottom of exactly 32 Python frames (the module, run(), f0..f28 and a lambda: one
code object each, like a model's stack), called through ctypes.CDLL (GIL released). Run it under
libvramtrace.so with VRAMTRACE_PYTHON=1 and =0 (bench/run_py_bench.sh does): the difference is
walk + intern + encode of the Python frames.

Usage: python3.X bench/py_event_bench.py HELPER.so time PAIRS BATCHES   -> one line of figures
       python3.X bench/py_event_bench.py HELPER.so loop PAIRS           -> just the loop (callgrind)
"""
import ctypes
import statistics
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.vt_py_bench_time.restype = ctypes.c_double
MODE, PAIRS = sys.argv[2], int(sys.argv[3])
BATCHES = int(sys.argv[4]) if len(sys.argv) > 4 else 1
DEPTH = 29  # f0..f28, plus the lambda, run() and the module frame: 32 Python frames at the call

NS = {"lib": lib}
exec("".join("def f%d(fn):\n    return %s\n" % (i, "f%d(fn)" % (i + 1) if i < DEPTH - 1 else "fn()")
             for i in range(DEPTH)), NS)


def frames_here():
    n, f = 0, sys._getframe()
    while f:
        n, f = n + 1, f.f_back
    return n


def run():
    if lib.vt_py_bench_setup() != 0:
        sys.exit("py_event_bench: driver setup failed")
    # frames_here() is one frame deeper than the call into the helper.
    depth = NS["f0"](lambda: frames_here() - 1)
    if depth != 32:
        sys.exit("py_event_bench: expected 32 Python frames at the call, found %d" % depth)
    if MODE == "loop":
        return NS["f0"](lambda: lib.vt_py_bench_loop(PAIRS))
    NS["f0"](lambda: lib.vt_py_bench_time(PAIRS))  # warm up: first events write their stacks
    per_pair = []
    for _ in range(BATCHES):  # (not a comprehension: before 3.12 that is one more frame)
        per_pair.append(NS["f0"](lambda: lib.vt_py_bench_time(PAIRS)) / PAIRS)
    if min(per_pair) < 0:
        sys.exit("py_event_bench: a driver call failed")
    v = sys.version_info
    print("CPython %d.%d.%d: %d batches of %d pairs: median %.1f ns/pair, best %.1f ns/pair"
          % (v[0], v[1], v[2], BATCHES, PAIRS, statistics.median(per_pair), min(per_pair)))
    return 0


sys.exit(run())
