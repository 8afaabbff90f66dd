"""Tests for the GIL-free Python frame walker (interpose/python) through the ctypes shim
tests/python/pyalloc.cpp. Asserts the innermost frame's file:line:qualname in every calling
context an allocation can come from, the no-thread-state cases, the deadlock probe, a stress run
against sys._current_frames()/gc.collect(), and the offline line tables against co_lines().

Usage: python3.X tests/python/test_frames.py PATH/TO/libpyalloc.so [unittest options]
"""
import asyncio
import ctypes
import gc
import os
import subprocess
import sys
import threading
import time
import unittest

if len(sys.argv) < 2:
    sys.exit(__doc__)
LIB_PATH = os.path.abspath(sys.argv.pop(1))
C = ctypes.CDLL(LIB_PATH)   # calls release the GIL, like PyTorch's bindings at cudaMalloc time
P = ctypes.PyDLL(LIB_PATH)  # calls keep the GIL
for lib in (C, P):
    lib.capture_here.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.capture_locked.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.capture_in_pthread.argtypes = [ctypes.POINTER(ctypes.c_int)]
    lib.capture_in_bare_tstate.argtypes = [ctypes.POINTER(ctypes.c_int)]
    lib.line_of.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint]
    lib.pa_init.argtypes = [ctypes.c_char_p, ctypes.c_int]

CAP = 1 << 16
# How to start this interpreter again: Debian's newer CPythons run through a launcher script
# (tests/python/run_all.sh passes it), sys.executable alone would miss their C library.
PYTHON = os.environ.get("VT_PYTHON_LAUNCHER") or sys.executable
MINOR = sys.version_info[1]
HERE = os.path.basename(__file__)


def newbuf():
    return ctypes.create_string_buffer(CAP)


def parse(buf, n):
    """[(basename, line, qualname)] innermost first, from capture_here's output."""
    assert n >= 0, "capture_here failed (describe_code returned false): %d" % n
    out = []
    for s in buf.value.decode("utf-8").splitlines():
        f, line, q = s.rsplit(":", 2)
        out.append((os.path.basename(f), int(line), q))
    assert len(out) == n, (n, out)
    return out


def qual(q):
    """Expected name: co_qualname on 3.11+, co_name (last component) on 3.10."""
    return q if MINOR >= 11 else q.rsplit(".", 1)[-1]


class Outer:
    def method(self, b):
        return (C.capture_here(b, CAP), sys._getframe().f_lineno)

    class Inner:
        @staticmethod
        def smethod(b):
            return (C.capture_here(b, CAP), sys._getframe().f_lineno)

        @classmethod
        def cmethod(cls, b):
            return (C.capture_here(b, CAP), sys._getframe().f_lineno)


def plain(b, lib=C):
    return (lib.capture_here(b, CAP), sys._getframe().f_lineno)


def level3(b):
    return (C.capture_here(b, CAP), sys._getframe().f_lineno)


def level2(b, lines):
    lines.append(sys._getframe().f_lineno + 1)
    return level3(b)


def level1(b, lines):
    lines.append(sys._getframe().f_lineno + 1)
    return level2(b, lines)


def gen(b):
    yield (C.capture_here(b, CAP), sys._getframe().f_lineno)


def delegating(b):
    yield from gen(b)


async def coro_inner(b):
    await asyncio.sleep(0)
    return (C.capture_here(b, CAP), sys._getframe().f_lineno)


async def coro_outer(b):
    await asyncio.sleep(0)
    return await coro_inner(b)


def rec(b, d):
    return rec(b, d - 1) if d else C.capture_here(b, CAP)


class Frames(unittest.TestCase):
    def check(self, res, b, q, file=HERE):
        frames = parse(b, res[0])
        self.assertGreater(len(frames), 0)
        self.assertEqual(frames[0], (file, res[1], qual(q)), frames)
        return frames

    def test_init_ok(self):
        why = ctypes.create_string_buffer(256)
        self.assertEqual(C.pa_init(why, 256), 1, why.value)

    def test_self_test_with_gil(self):
        self.assertEqual(P.self_test(), 1)
        self.assertEqual([P.self_test() for _ in gen(newbuf())], [1])  # inside a generator frame
        self.assertEqual(C.self_test(), 0)  # GIL released: must decline without touching the API
        self.assertEqual(C.pa_init(None, 0), 1, "self-test must not have disabled the walker")

    def test_plain_function(self):
        b = newbuf()
        frames = self.check(plain(b), b, "plain")
        self.assertEqual(frames[1][2], qual("Frames.test_plain_function"))

    def test_gil_held_pydll(self):
        b = newbuf()
        self.check(plain(b, P), b, "plain")

    def test_methods(self):
        b = newbuf()
        self.check(Outer().method(b), b, "Outer.method")
        self.check(Outer.Inner.smethod(b), b, "Outer.Inner.smethod")
        self.check(Outer.Inner.cmethod(b), b, "Outer.Inner.cmethod")

    def test_nested_order(self):
        b, lines = newbuf(), []
        res = level1(b, lines)
        frames = parse(b, res[0])
        self.assertEqual(frames[:3], [(HERE, res[1], "level3"), (HERE, lines[1], "level2"), (HERE, lines[0], "level1")])
        self.assertEqual(frames[3][2], qual("Frames.test_nested_order"))

    def test_generator(self):
        b = newbuf()
        res = next(gen(b))
        frames = self.check(res, b, "gen")
        self.assertEqual(frames[1][2], qual("Frames.test_generator"))

    def test_yield_from(self):
        b = newbuf()
        res = list(delegating(b))[0]
        frames = self.check(res, b, "gen")
        self.assertEqual([f[2] for f in frames[1:3]], [qual("delegating"), qual("Frames.test_yield_from")])

    def test_coroutines(self):
        b = newbuf()
        res = asyncio.run(coro_outer(b))
        frames = self.check(res, b, "coro_inner")
        self.assertEqual(frames[1][2], qual("coro_outer"))

    def test_thread(self):
        b, out = newbuf(), []

        def worker():
            out.append((C.capture_here(b, CAP), sys._getframe().f_lineno))

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        frames = self.check(out[0], b, "Frames.test_thread.<locals>.worker")
        self.assertEqual(frames[1][2], qual("Thread.run"))

    def test_called_back_from_c(self):
        # sorted() calls the key function from C: 3.12+ put a C-stack entry frame in between.
        b, out = newbuf(), []

        def key(x):
            out.append((C.capture_here(b, CAP), sys._getframe().f_lineno))
            return x

        sorted([1], key=key)
        frames = self.check(out[0], b, "Frames.test_called_back_from_c.<locals>.key")
        self.assertEqual(frames[1][2], qual("Frames.test_called_back_from_c"))

    def test_comprehension_and_lambda(self):
        b = newbuf()
        res = [(C.capture_here(b, CAP), sys._getframe().f_lineno) for _ in range(1)][0]
        inlined = MINOR >= 12  # PEP 709: comprehensions run in the enclosing frame
        self.check(res, b, "Frames.test_comprehension_and_lambda" + ("" if inlined else ".<locals>.<listcomp>"))
        res = (lambda: (C.capture_here(b, CAP), sys._getframe().f_lineno))()
        self.check(res, b, "Frames.test_comprehension_and_lambda.<locals>.<lambda>")

    def test_exception_handler(self):
        b = newbuf()
        try:
            raise ValueError
        except ValueError:
            res = (C.capture_here(b, CAP), sys._getframe().f_lineno)
        self.check(res, b, "Frames.test_exception_handler")

    def test_deep_stack_is_capped(self):
        b = newbuf()
        self.assertEqual(rec(b, 200), 64)
        self.assertEqual({f[2] for f in parse(b, 64)}, {"rec"})

    def test_unicode_names(self):
        b = newbuf()
        src = "def fünc(b):\n    return C.capture_here(b, CAP)\ndef 函数(b):\n    return fünc(b)\n"
        ns = {"C": C, "CAP": CAP}
        exec(compile(src, "/tmp/😀_ünï.py", "exec"), ns)
        frames = parse(b, ns["函数"](b))
        self.assertEqual(frames[:2], [("😀_ünï.py", 2, "fünc"), ("😀_ünï.py", 4, "函数")])

    def test_long_filename_truncated(self):
        b, name = newbuf(), "/tmp/" + "x" * 600 + ".py"
        ns = {"C": C, "CAP": CAP}
        exec(compile("def f(b):\n    return C.capture_here(b, CAP)\n", name, "exec"), ns)
        frames = parse(b, ns["f"](b))
        self.assertTrue(name.startswith("/tmp/" + frames[0][0]) and len(frames[0][0]) == 511 - 5, frames[0])

    def test_main_thread_has_state(self):
        self.assertEqual(C.has_state(), 1)

    def test_plain_pthread_has_nothing(self):
        st = ctypes.c_int(-1)
        self.assertEqual(C.capture_in_pthread(ctypes.byref(st)), 0)
        self.assertEqual(st.value, 0)

    def test_thread_state_without_frames(self):
        st = ctypes.c_int(-1)
        self.assertEqual(C.capture_in_bare_tstate(ctypes.byref(st)), 0)
        self.assertEqual(st.value, 1)


def all_code_objects(modules):
    seen, todo = {}, []
    for m in modules:
        for v in vars(m).values():
            for f in (v,) + tuple(vars(v).values() if isinstance(v, type) else ()):
                f = getattr(f, "__func__", f)
                if hasattr(f, "__code__"):
                    todo.append(f.__code__)
    while todo:
        co = todo.pop()
        if id(co) not in seen:
            seen[id(co)] = co
            todo.extend(c for c in co.co_consts if hasattr(c, "co_code"))
    return list(seen.values())


class LineTables(unittest.TestCase):
    def test_every_instruction_matches_co_lines(self):
        import json.decoder, email.message, asyncio.base_events, unittest.case, threading as th
        mods = [sys.modules[__name__], json.decoder, email.message, asyncio.base_events, unittest.case, th]
        checked = 0
        for co in all_code_objects(mods):
            want = {}
            for start, end, line in co.co_lines():
                for off in range(start, end, 2):
                    want[off] = -1 if line is None else line
            t = co.co_linetable
            for off in range(0, len(co.co_code), 2):
                got = C.line_of(MINOR, t, len(t), co.co_firstlineno, off)
                self.assertEqual(got, want.get(off, -1), (co, off))
                checked += 1
        self.assertEqual(C.line_of(MINOR, b"", 0, 7, 0xFFFFFFFF), 7)
        self.assertGreater(checked, 10000)


class Stress(unittest.TestCase):
    def test_captures_while_others_inspect_and_collect(self):
        stop = threading.Event()
        errors = []

        def inspector():
            while not stop.is_set():
                sys._current_frames()
                junk = [[] for _ in range(100)]
                for j in junk:
                    j.append(junk)  # cycles for the collector
                gc.collect()

        def worker(k):
            b = newbuf()
            for i in range(1500):
                try:
                    if i % 3 == 0:
                        frames = parse(b, next(gen(b))[0])
                        ok = frames[0][2] == qual("gen")
                    elif i % 3 == 1:
                        frames = parse(b, Outer().method(b)[0])
                        ok = frames[0][2] == qual("Outer.method")
                    else:
                        frames = parse(b, rec(b, 10 + k))
                        ok = [f[2] for f in frames[10 + k:12 + k]] == ["rec", qual(
                            "Stress.test_captures_while_others_inspect_and_collect.<locals>.worker")]
                    if not ok:
                        errors.append(frames[:2])
                except Exception as e:  # pragma: no cover
                    errors.append(repr(e))

        insp = threading.Thread(target=inspector)
        insp.start()
        workers = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for w in workers:
            w.start()
        b = newbuf()
        for _ in range(1000):  # the main thread captures with the GIL held meanwhile
            self.assertEqual(parse(b, plain(b, P)[0])[0][2], "plain")
        for w in workers:
            w.join()
        stop.set()
        insp.join()
        self.assertEqual(errors, [])


def deadlock_child():
    """Thread A holds the mutex and captures; this thread holds the GIL and waits for the mutex."""
    b, out = newbuf(), []

    def holder():
        out.append((C.capture_locked(b, CAP), sys._getframe().f_lineno))

    t = threading.Thread(target=holder)
    t.start()
    deadline = time.time() + 10
    while not C.a_locked() and time.time() < deadline:
        time.sleep(0.001)
    P.hold_gil_and_lock()
    t.join()
    frames = parse(b, out[0][0])
    assert frames[0] == (HERE, out[0][1], qual("deadlock_child.<locals>.holder")), frames
    print("DEADLOCK-PROBE-OK")


class Deadlock(unittest.TestCase):
    def test_capture_while_gil_holder_waits_for_our_mutex(self):
        try:
            r = subprocess.run([PYTHON, os.path.abspath(__file__), LIB_PATH, "--deadlock-child"],
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            self.fail("capture() blocked while another thread held the GIL (deadlock)")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("DEADLOCK-PROBE-OK", r.stdout)


if __name__ == "__main__":
    if sys.argv[1:] == ["--deadlock-child"]:
        deadlock_child()
        sys.exit(0)
    unittest.main(verbosity=1)
