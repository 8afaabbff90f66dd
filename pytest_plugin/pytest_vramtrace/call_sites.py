"""The call sites holding the most GPU memory at a test's peak, for the failure message of a test
over its limit_vram (as pytest-memray lists a failing test's allocations). With PyTorch, the
tensors the test itself allocated, by the user's line (the report's rule: the first frame in the
user's code, not torch/ or site-packages); otherwise device memory by call site.

They come from the trace the test process is writing (vramtrace_trace_path in the live query API),
read back with the vramtrace CLI beside the preloaded library (<prefix>/lib/libvramtrace.so ->
<prefix>/bin/vramtrace, else `vramtrace` on PATH): the test's region gives the time of its peak
(`regions[].t_peak_ns` of `vramtrace report --format json`, `regions[].allocated.t_peak_ns` for
tensors), and `vramtrace peak --at` the live set then. Two passes over the trace so far, only for a test that failed.
"""
import ctypes
import json
import os
import shutil
import subprocess


def _trace_path():
    try:
        f = ctypes.CDLL(None).vramtrace_trace_path
    except AttributeError:
        return None
    f.restype, f.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(4096)
    n = f(buf, len(buf))
    return buf.value.decode("utf-8", "surrogateescape") if 0 < n < len(buf) else None


def _cli_path():
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[-1]
                if path.endswith("/libvramtrace.so"):
                    cli = os.path.join(os.path.dirname(os.path.dirname(path)), "bin", "vramtrace")
                    if os.access(cli, os.X_OK):
                        return cli
    except OSError:
        pass
    return shutil.which("vramtrace")


def _json(cli, args, timeout):
    # The CLI must not see the preload: it would trace itself.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([cli] + args, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError((p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1])
    return json.loads(p.stdout)


def _label(stack):
    """The innermost frame that names something and its caller: Python frames first."""
    named = [f for f in stack if f.get("python")] or [f for f in stack if f.get("function") not in (None, "", "??")]
    parts = []
    for f in named[:2]:
        where = os.path.basename(f.get("file") or "")
        parts.append(f["function"] + (" (%s:%d)" % (where, f.get("line", 0)) if where else ""))
    return " < ".join(parts) if parts else "(no stack recorded)"


def _tensor_lines(peak, since_ns, top, format_bytes):
    """The test's own tensors live at its peak (handed out since it began), summed by line."""
    by_line = {}
    for dev in peak.get("live_at", {}).get("torch", []):
        for seg in dev.get("segments", []):
            for b in seg.get("blocks", []):
                if b.get("t_ns", 0) >= since_ns:
                    n, c = by_line.get(b.get("line") or "(no stack recorded)", (0, 0))
                    by_line[b.get("line") or "(no stack recorded)"] = (n + b["size"], c + 1)
    rows = sorted(by_line.items(), key=lambda kv: -kv[1][0])[:top]
    return ["%10s in %d tensor%s: %s" % (format_bytes(n), c, "" if c == 1 else "s", line) for line, (n, c) in rows]


def top_sites(region, format_bytes, top=5, timeout=120, tensors=False):
    """Lines naming the sites that held the most at `region`'s peak (PyTorch's tensors the test
    allocated when `tensors`, else device memory), or one line saying why they are unavailable."""
    trace, cli = _trace_path(), _cli_path()
    if not trace:
        return ["(call sites unavailable: no trace open in this process)"]
    if not cli:
        return ["(call sites unavailable: the vramtrace command was not found beside libvramtrace.so or on PATH)"]
    try:
        rep = _json(cli, ["report", trace, "--format", "json", "--top", "1"], timeout)
        mine = [r for r in rep.get("regions", []) if r.get("name") == region]
        if not mine:
            return ["(call sites unavailable: the test's region is not in %s)" % trace]
        t = rep["trace"]
        origin = min(t["start_monotonic_ns"], t["first_t_ns"]) if t.get("first_t_ns") else t["start_monotonic_ns"]
        tensors = tensors and bool(mine[-1].get("allocated"))
        t_peak = mine[-1]["allocated"]["t_peak_ns"] if tensors else mine[-1]["t_peak_ns"]
        at = max(0, t_peak - origin)
        peak = _json(cli, ["peak", trace, "--format", "json", "--top", str(top), "--at", "%dns" % at], timeout)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, subprocess.TimeoutExpired) as e:
        return ["(call sites unavailable: %s)" % e]
    if tensors:
        return _tensor_lines(peak, mine[-1]["t_begin_ns"], top, format_bytes) or \
            ["(no tensor the test allocated was live at its peak)"]
    groups = [g for g in peak.get("live_at", {}).get("live_set", []) if g.get("kind") == "device"][:top]
    if not groups:
        return ["(no device memory was live at the test's peak)"]
    lines = []
    for g in groups:
        n = g.get("count", 0)
        where = g.get("line") or _label(g.get("stack", []))  # the report's user line, where it gives one
        lines.append("%10s in %d allocation%s: %s" % (format_bytes(g["bytes"]), n, "" if n == 1 else "s", where))
    return lines
