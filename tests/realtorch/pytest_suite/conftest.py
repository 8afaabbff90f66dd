"""PyTorch's own view of each test's call phase, the oracle for the plugin's figures: its allocated
bytes at the start and its max_memory_allocated() during the call, written one JSON line per test
to $VT_RT_TORCH_FIGURES."""
import json
import os

import pytest
import torch


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    yield
    own = torch.cuda.max_memory_allocated() - start
    with open(os.environ["VT_RT_TORCH_FIGURES"], "a") as f:
        f.write(json.dumps({"test": item.nodeid, "own_peak": own}) + "\n")
