"""The call sites holding the most GPU memory at a test's peak, for the failure message of a test
over its limit_vram (as pytest-memray lists a failing test's allocations).

They come from the trace the test process is writing (vramtrace_trace_path in the live query API),
read back with the vramtrace CLI beside the preloaded library (<prefix>/lib/libvramtrace.so ->
<prefix>/bin/vramtrace, else `vramtrace` on PATH): the test's region gives the time of its peak
(`regions[].t_peak_ns` of `vramtrace report --format json`), and `vramtrace peak --at` the live
set then. Two passes over the trace so far, only for a test that failed.
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


def top_sites(region, format_bytes, top=5, timeout=120):
    """Lines naming the sites that held the most device memory at `region`'s peak, or one line
    saying why they are unavailable."""
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
        at = max(0, mine[-1]["t_peak_ns"] - origin)
        peak = _json(cli, ["peak", trace, "--format", "json", "--top", str(top), "--at", "%dns" % at], timeout)
    except (OSError, ValueError, KeyError, RuntimeError, subprocess.TimeoutExpired) as e:
        return ["(call sites unavailable: %s)" % e]
    groups = [g for g in peak.get("live_at", {}).get("live_set", []) if g.get("kind") == "device"][:top]
    if not groups:
        return ["(no device memory was live at the test's peak)"]
    lines = []
    for g in groups:
        n = g.get("count", 0)
        lines.append("%10s in %d allocation%s: %s" % (format_bytes(g["bytes"]), n, "" if n == 1 else "s", _label(g.get("stack", []))))
    return lines
