"""PyTorch's own view of its memory at marked instants, for the oracles of tests/realtorch/check.py.

A workload calls mark("after step 2") where it wants both views compared. mark() then
  - marks the instant for vramtrace: an empty region named like the mark (include/vramtrace.h's
    vramtrace_region_begin/end, found in the process when libvramtrace.so is preloaded);
  - appends one JSON line to $VT_RT_OUT/marks.jsonl with torch.cuda.memory_stats() of every
    initialized device and, when PyTorch's recorder runs, the segments and live blocks of
    torch.cuda.memory._snapshot() with the frames it recorded for each block.
Importing this module starts PyTorch's recorder (_record_memory_history, Python stacks) unless
VT_RT_RECORDER=0. Without $VT_RT_OUT, mark() only marks the instant."""
import ctypes
import json
import os
import sysconfig

import torch

_OUT = os.environ.get("VT_RT_OUT")
_RECORDER = os.environ.get("VT_RT_RECORDER", "1") != "0" and _OUT is not None
_lib = ctypes.CDLL(None)
_begin = getattr(_lib, "vramtrace_region_begin", None)
_end = getattr(_lib, "vramtrace_region_end", None)
if _begin:
    _begin.argtypes = _end.argtypes = [ctypes.c_char_p]
if _RECORDER and torch.cuda.get_allocator_backend() == "native":  # (cudaMallocAsync has no recorder)
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
else:
    _RECORDER = False

# "Library" code, as vramtrace counts it (docs/report-schema.md, Frame.library): installed packages
# and the standard library. The user's line is the innermost frame outside them.
_LIBRARY_DIRS = tuple(os.path.realpath(p) + os.sep for p in
                      {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                       sysconfig.get_paths()["platlib"], os.path.dirname(os.path.dirname(torch.__file__))})


def _user_line(frames):
    for f in frames:
        name = f.get("filename", "")
        if not name or name.startswith("<") or os.path.realpath(name).startswith(_LIBRARY_DIRS) \
                or "/dist-packages/" in name or "/site-packages/" in name:
            continue
        return f"{os.path.basename(name)}:{f['line']}"
    return None


def _figures(device):
    s = torch.cuda.memory_stats(device)
    return {
        "allocated": s.get("allocated_bytes.all.current", 0),
        "reserved": s.get("reserved_bytes.all.current", 0),
        "inactive_split": s.get("inactive_split_bytes.all.current", 0),
        "max_allocated": s.get("allocated_bytes.all.peak", 0),
        "max_reserved": s.get("reserved_bytes.all.peak", 0),
        "num_alloc_retries": s.get("num_alloc_retries", 0),
        "num_ooms": s.get("num_ooms", 0),
        "segments": s.get("segment.all.current", 0),
        "blocks": s.get("allocation.all.current", 0),
    }


def _snapshot():
    snap = torch.cuda.memory._snapshot()
    segments = []
    for seg in snap["segments"]:
        blocks = [{"address": b["address"], "size": b["size"], "line": _user_line(b.get("frames", [])),
                   "frames": [f"{os.path.basename(f['filename'])}:{f['line']}" for f in b.get("frames", [])][:8]}
                  for b in seg["blocks"] if b["state"] == "active_allocated"]
        segments.append({"device": seg["device"], "address": seg["address"], "total_size": seg["total_size"],
                         "expandable": seg.get("is_expandable", False), "pool": list(seg.get("segment_pool_id", (0, 0))),
                         "blocks": blocks})
    return segments


def mark(tag):
    """Both views of this instant: PyTorch's (written now) and vramtrace's (the region mark)."""
    rec = {"tag": tag}
    if torch.cuda.is_initialized():
        rec["devices"] = {str(d): _figures(d) for d in range(torch.cuda.device_count())}
        if _RECORDER:
            rec["segments"] = _snapshot()
    if _begin:  # an empty region: a mark of this instant, after PyTorch's figures were read
        _begin(tag.encode())
        _end(tag.encode())
    if _OUT:
        with open(os.path.join(_OUT, "marks.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
    return rec
