"""pytest plugin for vramtrace: per-test GPU memory limits and peaks.

Run the tests under vramtrace (`vramtrace run -- python -m pytest ...`): the plugin then reads
what vramtrace sees through its live query API (include/vramtrace.h, exported by the preloaded
libvramtrace.so), marks each test as a region in the trace (so `vramtrace report` shows memory
per test), and

- fails a test marked `@pytest.mark.limit_vram("2 GiB")` whose own peak exceeds the limit, listing
  the lines that held the most at that peak (call_sites.py);
- with `--vram-report`, prints each test's own peak at the end.

A test's own peak is what it allocated above what was live when it started, at its highest: with
PyTorch, its tensors (torch.cuda.memory_allocated, as PyTorch reports it with every block: what
PyTorch's cache keeps from earlier tests, and their tensors still alive, are not the test's); without
PyTorch's block layer, device memory as the driver hands it out. So a test's figure does not depend
on the tests that ran before it.

Without vramtrace it enforces nothing and, when a test has a limit or --vram-report was given,
says so once.
"""
import ctypes

import pytest

from . import call_sites
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
                                    ("vramtrace_live_bytes", ctypes.c_int64, [ctypes.c_int]),
                                    ("vramtrace_peak_bytes", ctypes.c_int64, [ctypes.c_int]),
                                    ("vramtrace_tensor_bytes", ctypes.c_int64, [ctypes.c_int]),
                                    ("vramtrace_tensor_peak_bytes", ctypes.c_int64, [ctypes.c_int]),
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


def _limit_of(item):
    """The limit_vram marker's size in bytes, None without one; UsageError when it is malformed."""
    marker = item.get_closest_marker("limit_vram")
    if marker is None:
        return None
    if len(marker.args) != 1 or marker.kwargs:
        raise pytest.UsageError(f"{item.nodeid}: limit_vram takes one size, e.g. @pytest.mark.limit_vram(\"2 GiB\")")
    try:
        return parse_size(marker.args[0])
    except ValueError as e:
        raise pytest.UsageError(f"{item.nodeid}: {e}") from None


def pytest_collection_modifyitems(session, config, items):
    # Every marker is checked before anything runs: a typo in a limit stops the run with one line
    # (pytest's usage error, exit 4), not a traceback from inside the plugin halfway through.
    global _limits_seen
    for item in items:
        if _limit_of(item) is not None:
            _limits_seen = True


_over = {}  # nodeid -> the failure message of a test over its limit
_limits_seen = False  # a collected test has a limit_vram marker


_DRIVER_ROWS = range(17)  # the live API's device rows: 0-15, and 16 for every device above
_TENSOR_DEVICES = range(16)


def _start_figures():
    """What is live as a test starts, per device; the peaks then start from it."""
    _api.reset_peak(-1)
    return ([max(_api.tensor_bytes(d), 0) for d in _TENSOR_DEVICES],
            [_api.live_bytes(d) for d in _DRIVER_ROWS])


def _own_peak(start):
    """(bytes, what): the most the test held above its start on any one device. PyTorch's tensors
    when its block layer was on by the end of the test, else device memory."""
    tensors, driver = start
    peaks = [_api.tensor_peak_bytes(d) for d in _TENSOR_DEVICES]
    if any(p >= 0 for p in peaks):
        return max(max(p - s, 0) for p, s in zip(peaks, tensors) if p >= 0), "tensors"
    return max(max(_api.peak_bytes(d) - s, 0) for d, s in zip(_DRIVER_ROWS, driver)), "device memory"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = _limit_of(item)
    if _api is None:
        yield
        return
    name = item.nodeid.encode("utf-8", "replace")
    start = _start_figures()
    _api.region_begin(name)
    try:
        yield
    finally:
        _api.region_end(name)
    peak, what = _own_peak(start)
    _peaks[item.nodeid] = peak
    if limit is not None and peak > limit:
        if what == "tensors":
            head = f"peak of PyTorch tensors allocated during the test {format_bytes(peak)} ({peak} bytes)"
            holders = "largest tensors the test allocated, by line, at its peak (vramtrace):"
        else:
            head = f"peak GPU memory {format_bytes(peak)} ({peak} bytes)"
            holders = "largest holders of device memory at the test's peak (vramtrace):"
        sites = call_sites.top_sites(item.nodeid, format_bytes, tensors=what == "tensors")
        _over[item.nodeid] = (f"{head} exceeds limit_vram {format_bytes(limit)} ({limit} bytes)\n"
                              f"{holders}\n  " + "\n  ".join(sites))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # The limit fails the call phase's report, as an assertion in the test would: raising from
    # the hook instead sends pytest's progress output into the test's captured teardown.
    outcome = yield
    report = outcome.get_result()
    message = _over.pop(item.nodeid, None) if call.when == "call" else None
    if message and report.passed:
        report.outcome = "failed"
        report.longrepr = message


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    if _api is None:
        # Installed with vramtrace, the plugin loads in every pytest run: it speaks only when it
        # was asked for something.
        if _limits_seen or config.getoption("--vram-report"):
            tr.write_line("vramtrace: not active (run the tests under `vramtrace run -- python -m pytest ...`): "
                          "limit_vram markers were not enforced", yellow=True)
        return
    if not config.getoption("--vram-report"):
        return
    tr.section("GPU memory per test: its own peak above what was live at its start (vramtrace)")
    for nodeid, peak in sorted(_peaks.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{format_bytes(peak):>12}  {nodeid}  ({peak} bytes)")
