"""A fragmentation OOM: a data pipeline keeps every third 6 MiB batch buffer (for logging), so
every 20 MiB segment of the cache stays pinned by one; 2/3 of the cache is free, yet a 1 GiB
request cannot be placed, and the cache flush on the retry cannot release a segment that still
holds a tensor. (Run with FAKECUDA_TOTAL_BYTES=2GiB.)"""
import torch

from vt_marks import mark

buffers = [torch.empty(6 << 20, dtype=torch.uint8, device="cuda") for _ in range(120)]
mark("buffers filled")
kept = buffers[::3]
del buffers
mark("two thirds freed")
embedding_table = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
