"""pytest plugin for vramtrace: per-test GPU memory limits and peaks.

Run the tests under vramtrace (`vramtrace run -- python -m pytest ...`): the plugin then reads
what vramtrace sees through its live query API (include/vramtrace.h, exported by the preloaded
libvramtrace.so), marks each test as a region in the trace (so `vramtrace report` shows memory
per test), and

- fails a test marked `@pytest.mark.limit_vram("2 GiB")` whose peak device memory exceeds the limit;
- with `--vram-report`, prints each test's peak at the end.

Without vramtrace it says so once and enforces nothing.
"""
import ctypes

import pytest

from .sizes import format_bytes, parse_bytes

def parse_size(text):
    """'2 GiB', '512MB', 1048576 -> bytes (the rules of `vramtrace check`: sizes.py)."""
    try:
        return parse_bytes(text)
    except ValueError as e:
        raise ValueError(f"limit_vram: {e}") from None


class _Api:
    """vramtrace's exported functions, or None when the library is not preloaded."""

    @staticmethod
    def load():
        try:
            lib = ctypes.CDLL(None)
            api = _Api()
            for name, res, args in (("vramtrace_active", ctypes.c_int, []),
                                    ("vramtrace_peak_bytes", ctypes.c_int64, [ctypes.c_int]),
                                    ("vramtrace_reset_peak", ctypes.c_int, [ctypes.c_int]),
                                    ("vramtrace_region_begin", ctypes.c_int, [ctypes.c_char_p]),
                                    ("vramtrace_region_end", ctypes.c_int, [ctypes.c_char_p])):
                f = getattr(lib, name)
                f.restype, f.argtypes = res, args
                setattr(api, name[len("vramtrace_"):], f)
        except (AttributeError, OSError):
            return None
        return api if api.active() == 1 else None


_api = None
_peaks = {}


def pytest_addoption(parser):
    parser.addoption("--vram-report", action="store_true", default=False,
                     help="print each test's peak GPU memory as vramtrace saw it")


def pytest_configure(config):
    global _api
    config.addinivalue_line("markers", "limit_vram(size): fail the test when its peak GPU memory exceeds size "
                                       "(e.g. '2 GiB'); needs the run to be under `vramtrace run`")
    _api = _Api.load()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    marker = item.get_closest_marker("limit_vram")
    limit = parse_size(marker.args[0]) if marker and marker.args else None
    if _api is None:
        yield
        return
    name = item.nodeid.encode("utf-8", "replace")
    _api.reset_peak(-1)
    _api.region_begin(name)
    try:
        yield
    finally:
        _api.region_end(name)
    peak = _api.peak_bytes(-1)
    _peaks[item.nodeid] = peak
    if limit is not None and peak > limit:
        pytest.fail(f"peak GPU memory {format_bytes(peak)} ({peak} bytes) exceeds limit_vram {format_bytes(limit)} "
                    f"({limit} bytes)", pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    if _api is None:
        tr.write_line("vramtrace: not active (run the tests under `vramtrace run -- python -m pytest ...`): "
                      "limit_vram markers were not enforced", yellow=True)
        return
    if not config.getoption("--vram-report"):
        return
    tr.section("GPU memory per test (vramtrace)")
    for nodeid, peak in sorted(_peaks.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{format_bytes(peak):>12}  {nodeid}")
