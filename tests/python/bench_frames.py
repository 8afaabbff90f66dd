"""Cost of vt::py::capture() for a 32-frame Python stack (GIL released, like the real hook), and of
describe_code() (paid once per code object, not per event). Prints one line; exits non-zero only
if the walk does not see the 32 frames.

Usage: python3.X tests/python/bench_frames.py PATH/TO/libpyalloc.so [iterations]
"""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.bench_capture.restype = ctypes.c_double
lib.bench_describe.restype = ctypes.c_double
ITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 100000


def deep(d, fn):
    # 31 levels of this plus the module frame: at least 32 Python frames above the C loop.
    return deep(d - 1, fn) if d else fn()


# 32 distinct functions f0 -> f1 -> ... -> f31 (one code object each, like a real model's stack).
NS = {}
exec("".join("def f%d(fn):\n    return %s\n" % (i, "f%d(fn)" % (i + 1) if i < 31 else "fn()") for i in range(32)), NS)


def timed(entry):
    n, best = ctypes.c_int(0), ctypes.c_double(0)
    median = entry(lambda: lib.bench_capture(ITERS, 32, ctypes.byref(n), ctypes.byref(best)))
    return n.value, median, best.value


def main():
    frames, median, best = timed(lambda fn: deep(31, fn))
    frames2, median2, best2 = timed(NS["f0"])
    nd = ctypes.c_int(0)
    describe = deep(31, lambda: lib.bench_describe(2000, ctypes.byref(nd)))
    v = sys.version_info
    print("CPython %d.%d.%d: capture() of %d frames: median %.1f ns, best %.1f ns (one function recursing); "
          "median %.1f ns, best %.1f ns (32 distinct functions); batches of 1000, %d calls; "
          "describe_code(): %.0f ns per code object" % (v[0], v[1], v[2], frames, median, best, median2, best2,
                                                         ITERS, describe))
    return 0 if frames == 32 and frames2 == 32 else 1


if __name__ == "__main__":
    sys.exit(main())
