"""Runs a workload script as __main__ and writes PyTorch's own figures for `vramtrace whatif`'s
check to the JSON file given: max_memory_reserved/allocated, the OOMs and whether the script ended
in one (caught here: the check compares outcomes, and an uncaught one is the script's end).
    probe.py SCRIPT OUT.json"""
import json
import os
import runpy
import sys

import torch

script, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` would (vt_marks)
oom = False
try:
    runpy.run_path(script, run_name="__main__")
except torch.cuda.OutOfMemoryError:
    oom = True
s = torch.cuda.memory_stats(0)
with open(out, "w") as f:
    json.dump({"peak_reserved": s.get("reserved_bytes.all.peak", 0), "peak_allocated": s.get("allocated_bytes.all.peak", 0),
               "num_ooms": s.get("num_ooms", 0), "ended_in_oom": oom, "alloc_retries": s.get("num_alloc_retries", 0)}, f)
