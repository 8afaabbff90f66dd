"""PyTorch's caching allocator without PyTorch: drives the stand-in libc10_cuda.so (fake_c10_cuda.cpp)
through ctypes, loaded RTLD_LOCAL as torch loads its libraries, from several threads, and writes
what the report must say to a JSON file (checked by check_torch.py).

    python3 torch_workload.py SCENARIO LIBDIR OUT.json

Expectations: "blocks": {address: [file, line, function, native thread id]} for tracked
allocations; "marks": {name: fc10_stats figures} at vramtrace regions; "ooms": [PyTorch's OOM
message]; "reports"/"forwarded": the allocator's own count of reports and what reached libc10.so."""
import ctypes
import json
import os
import sys
import threading

scenario, libdir, out_path = sys.argv[1:4]
KiB, MiB = 1 << 10, 1 << 20
lib = ctypes.CDLL(os.path.join(libdir, "libc10_cuda.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
lib.fc10_malloc.restype = ctypes.c_uint64
lib.fc10_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_free.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_set_stream.argtypes = [ctypes.c_int, ctypes.c_uint64]
lib.fc10_oom_message.restype = ctypes.c_char_p
lib.fc10_reports.restype = ctypes.c_uint64
lib.fc10_forwarded_usage.restype = ctypes.c_uint64
lib.fc10_forwarded_oom.restype = ctypes.c_uint64
lib.fc10_errno_changes.restype = ctypes.c_uint64
vt = ctypes.CDLL(None)                  # vramtrace_region_* when libvramtrace.so is preloaded
has_regions = hasattr(vt, "vramtrace_region_begin")
expect = {"blocks": {}, "marks": {}, "ooms": [], "lines": {}}
lock = threading.Lock()


def here(offset=0):
    """The caller's file, line (+ offset) and function."""
    f = sys._getframe(1)
    return f.f_code.co_filename, f.f_lineno + offset, getattr(f.f_code, "co_qualname", f.f_code.co_name)


def track(addr, where):
    """An allocation made on the caller's line `where` (from here())."""
    with lock:
        expect["blocks"][str(addr)] = [where[0], where[1], where[2], threading.get_native_id()]
    return addr


M = lib.fc10_malloc                     # called on the tracked lines themselves: the innermost frame
F = lib.fc10_free


def stats(dev=0):
    out = (ctypes.c_uint64 * 6)()
    lib.fc10_stats(dev, out)
    keys = ["allocated", "reserved", "inactive_split", "segments", "largest_free", "blocks"]
    return dict(zip(keys, list(out)))


def mark(name, dev=0):
    """Figures the report must show at this instant (a vramtrace region named `name`)."""
    if has_regions:
        vt.vramtrace_region_begin(name.encode())
        vt.vramtrace_region_end(name.encode())
    expect["marks"][name] = stats(dev)


def failed(p):
    """A request that must have failed; records PyTorch's message."""
    assert p == 0, "expected an out-of-memory failure"
    expect["ooms"].append(lib.fc10_oom_message().decode())


def line_of(name, where):
    expect["lines"][name] = [where[0], where[1], where[2]]


# ---- scenarios ----

def worker(k, keep):
    """Thread k: 40 blocks of its own sizes (k-th multiple of 64 KiB, and 3 MiB + k * 512 KiB),
    frees every other one: inactive splits in shared segments. Odd threads allocate on a stream of
    their own (0x5000 + k), as `with torch.cuda.stream(s)` would make it current."""
    stream = 0x5000 + k if k % 2 else 0
    lib.fc10_set_stream(0, stream)
    mine = []
    for i in range(20):
        small = M(0, (k + 1) * 64 * KiB)
        track(small, here(-1))
        large = M(0, 3 * MiB + k * 512 * KiB)
        track(large, here(-1))
        mine += [small, large]
    if stream:
        with lock:
            expect.setdefault("streams", {})[str(stream)] = len(mine)
    for i, p in enumerate(mine):
        if i % 4 in (1, 2):
            F(0, p)
        else:
            with lock:
                keep.append(p)


def threads():
    keep = []
    ts = [threading.Thread(target=worker, args=(k, keep), name=f"worker-{k}") for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    mark("after_threads")
    big = M(0, 48 * MiB)                    # its own segment
    track(big, here(-1))
    mark("with_big")
    F(0, big)
    mark("big_freed")                       # cached: reserved, not allocated, not an inactive split
    lib.fc10_empty_cache(0)
    mark("emptied")
    for p in keep[: len(keep) // 2]:
        F(0, p)
    mark("half_freed")


def fragmented():
    """Fill 20 MiB segments with 4 MiB blocks, free every other one (inactive splits), then ask for
    16 MiB: plenty reserved but unallocated, no free block large enough, no room for a segment."""
    held = []
    for i in range(40):
        p = M(0, 4 * MiB)
        if not p:
            break
        held.append(p)
    for i, p in enumerate(held):
        if i % 2:
            F(0, p)
    mark("fragmented")
    line_of("request", here(1))
    failed(M(0, 16 * MiB))


def live_set():
    """Live tensors fill the device; the request cannot fit anywhere."""
    held = []
    line_of("holders", here(1))
    while (p := M(0, 64 * MiB)):
        held.append(p)
    expect["ooms"].append(lib.fc10_oom_message().decode())  # the loop ends on a failure
    mark("full")
    line_of("request", here(1))
    failed(M(0, 64 * MiB))


def kept_alive():
    """A training loop that keeps each step's loss tensor (with its graph) alive."""
    history = []
    line_of("kept", here(6))
    for step in range(1000):
        acts = [M(0, 8 * MiB) for _ in range(4)]
        if not all(acts):
            expect["ooms"].append(lib.fc10_oom_message().decode())
            break
        loss = M(0, 24 * MiB)
        if not loss:
            expect["ooms"].append(lib.fc10_oom_message().decode())
            break
        history.append(loss)                # the missing .item(): the loss stays alive
        for a in acts:
            F(0, a)
    mark("end")


def outside():
    """Another library of this process (NCCL, say) takes most of the device with the driver."""
    helper = ctypes.CDLL(os.environ["VT_FAKE_NCCL"])
    assert helper.fake_nccl_reserve(ctypes.c_uint64(int(os.environ["VT_FAKE_NCCL_BYTES"]))) == 0
    held = [M(0, 32 * MiB) for _ in range(4)]
    mark("before")
    line_of("request", here(1))
    failed(M(0, 256 * MiB))


def deadlock_probe():
    """A thread allocates while holding the allocator mutex with the GIL released (as PyTorch does);
    this thread, holding the GIL, waits for that mutex. A hook that took the GIL would hang here."""
    lib_gil = ctypes.PyDLL(os.path.join(libdir, "libc10_cuda.so"), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    lib_gil.fc10_malloc.restype = ctypes.c_uint64
    lib_gil.fc10_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64]
    lib.fc10_slow_malloc.restype = ctypes.c_uint64
    lib.fc10_slow_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_int]
    got = []

    def slow():
        p = lib.fc10_slow_malloc(0, 1 * MiB, 300)
        track(p, here(-1))
        got.append(p)
    t = threading.Thread(target=slow)
    t.start()
    import time
    time.sleep(0.1)
    p = lib_gil.fc10_malloc(0, 2 * MiB)     # GIL held, waits for the mutex
    track(p, here(-1))
    t.join()
    mark("end")


def churn():
    """Many blocks for the cost and fast-path checks: 20000 alloc/free pairs on two threads."""
    def loop():
        for i in range(10000):
            p = M(0, 512 * (1 + i % 64))
            F(0, p)
    ts = [threading.Thread(target=loop) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    mark("end")


assert lib.fc10_init(1) == 0
{"threads": threads, "fragmented": fragmented, "live_set": live_set, "kept_alive": kept_alive,
 "outside": outside, "deadlock_probe": deadlock_probe, "churn": churn}[scenario]()
expect["reports"] = lib.fc10_reports(0)
expect["forwarded"] = lib.fc10_forwarded_usage()
expect["forwarded_oom"] = lib.fc10_forwarded_oom()
expect["errno_changes"] = lib.fc10_errno_changes()
expect["vtable_intact"] = lib.fc10_vtable_intact()
json.dump(expect, open(out_path, "w"), indent=1)
