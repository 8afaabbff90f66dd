"""Thirty-two threads run the same step; one of them keeps each step's output "for later", the
others let theirs go. The threads step together (a barrier per step: under a loaded machine a
thread left alone ran its steps in one burst, and its growth no longer spanned the run), so
all of them hold temporaries at the same line while only the one thread's own tensors grow.
The report must name the line and that thread, and no other line or segment."""
import json
import os
import threading
import time

import torch

from vt_marks import mark

torch.manual_seed(0)
w = torch.randn(512, 512, device="cuda")
kept = []
LEAKER = 7


def step(x):
    return torch.relu(x @ w)  # every thread's temporaries, and the kept outputs


STEPS = 60
barrier = threading.Barrier(32)


def worker(n):
    for _ in range(STEPS):
        barrier.wait()
        x = torch.randn(64, 512, device="cuda")
        y = step(x)
        if n == LEAKER:
            kept.append(y)  # kept alive: this thread's memory grows
        del x, y
        time.sleep(0.0005)
    if n == LEAKER and os.environ.get("VT_RT_OUT"):
        with open(os.path.join(os.environ["VT_RT_OUT"], "leaker.json"), "w") as f:
            json.dump({"tid": threading.get_native_id(), "line": f"threads_one_leaks.py:{step.__code__.co_firstlineno + 1}"}, f)


threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
for t in threads:
    t.start()
for t in threads:
    t.join()
mark("after the threads")
print("kept", len(kept))
