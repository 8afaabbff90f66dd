#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus (and the known-bug reproducers of
tests/fuzz/corpus (regress-*) with --crashes), encoding traces as format/trace_format.h describes.

  tests/fuzz/make_corpus.py [--crashes] [--real TRACE NAME]... OUT_DIR

--real shrinks a real trace (from `vramtrace run`) two ways: "full" keeps the 64 KiB header and
the claimed chunks up to the last one holding records (the real layout); "compact" moves the same
chunks into a 256-byte header slot and the smallest chunk size that holds them (the reader takes
the sizes from the header), which keeps the file small enough for the fuzzer to mutate well.
Seeds are deterministic; file names say what each one exercises. No name ends in .trace (that
pattern is git-ignored).
"""
import struct
import sys
from pathlib import Path

MAGIC = b"VRAMTRC\0"
CHUNK_MAGIC = 0x4B435456
HDR_FMT = "<8sIIIIQQQQIIQQii40s64s"  # FileHeader, 192 bytes
assert struct.calcsize(HDR_FMT) == 192
T0 = 1_000_000_000

# Op codes (format/op_table.h) and tags.
ALLOC, ALLOC_PITCH, FREE, MANAGED, HOST_ALLOC = 1, 2, 3, 4, 5
ALLOC_ASYNC, FREE_ASYNC, POOL_ASYNC, POOL_CREATE = 10, 12, 14, 16
MEM_CREATE, MEM_RELEASE, MEM_MAP, MEM_UNMAP, RESERVE, ADDR_FREE = 19, 20, 21, 22, 23, 24
CTX_DESTROY, PRIMARY_RESET = 30, 31
PROCESS, DEVICE, END, NOTE, STACK, MODULE, PYCODE, THREAD, CONFIG = range(0x80, 0x89)
REGION = 0x92
TORCH_BLOCK, TORCH_OOM, TORCH_STATUS, TORCH_CONFIG, TORCH_ALLOC = 0x93, 0x94, 0x95, 0x96, 0x9B
TORCH_STREAM_ALLOC = 0x9C
F_CTX, F_STREAM, F_FAILED, F_ADDR, F_SIZE, F_AUX, F_AUX2, F_STACK = (1 << i for i in range(8))
PY, PY_ENTRY = 1 << 63, 1 << 62


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return ((v << 1) ^ (v >> 63)) & ((1 << 64) - 1)


def string(b):
    if isinstance(b, str):
        b = b.encode()
    return varint(len(b)) + b


def record(tag, payload):
    return bytes([tag]) + varint(len(payload)) + payload


def meta(tag, body, dt=0):
    return record(tag, varint(dt) + body)


def event(op, dt=10, flags=0, ctx=None, dev=None, stream=None, failed=None, addr_delta=None,
          size=None, aux=None, aux2=None, stack=None, extra=b""):
    """An event record; each field given sets its flag (flags adds more bits)."""
    body = bytearray()
    if ctx is not None:
        flags |= F_CTX
        body += varint(ctx) + varint(dev if dev is not None else 1)
    if stream is not None:
        flags |= F_STREAM
        body += varint(stream)
    if failed is not None:
        flags |= F_FAILED
        body += b"".join(varint(x) for x in failed)
    if addr_delta is not None:
        flags |= F_ADDR
        body += varint(zigzag(addr_delta))
    for bit, v in ((F_SIZE, size), (F_AUX, aux), (F_AUX2, aux2), (F_STACK, stack)):
        if v is not None:
            flags |= bit
            body += varint(v)
    return record(op, varint(dt) + bytes([flags & 0xFF]) + bytes(body) + extra)


def header(major=1, minor=0, header_size=256, chunk_size=256, flags=1, pid=4242, ppid=1,
           end_ns=T0 + 10**9, session=b"fuzz-session", host=b"fuzzhost", pad=True, raw_magic=MAGIC):
    h = struct.pack(HDR_FMT, raw_magic, major, minor, header_size, chunk_size, pid, ppid,
                    1_700_000_000 * 10**9, T0, flags, 0, end_ns, 1, 0, 0, session, host)
    return h + bytes(max(0, header_size - len(h))) if pad else h


def chunk(records, index=0, tid=100, base_ns=T0, chunk_size=256, used=None, magic=CHUNK_MAGIC):
    body = bytes(records)
    if used is None:
        used = len(body)
    assert 32 + len(body) <= chunk_size, (len(body), chunk_size)
    c = struct.pack("<IIIIQQ", magic, used, tid, index, base_ns, 0) + body
    return c + bytes(chunk_size - len(c))


def size_for(*record_lists):
    n = max(len(bytes(r)) for r in record_lists) + 32
    return max(256, (n + 255) // 256 * 256)


def trace(chunks_records, header_size=256, chunk_size=None, **hdr):
    """chunks_records: list of (records, kwargs for chunk())."""
    cs = chunk_size or size_for(*[r for r, _ in chunks_records])
    out = header(header_size=header_size, chunk_size=cs, **hdr)
    for i, (recs, kw) in enumerate(chunks_records):
        kw = dict(kw)
        kw.setdefault("index", i)
        out += chunk(recs, chunk_size=cs, **kw)
    return out


def process_rec(argv=(b"python", b"train.py"), exe=b"/usr/bin/python3", driver=13000):
    return meta(PROCESS, varint(driver) + string(b"\0".join(argv) + b"\0") + string(exe))


def device_rec(ordinal=0, total=16 << 30, name=b"Fake GPU", uuid=bytes(range(16))):
    return meta(DEVICE, varint(ordinal) + varint(total) + string(name) + string(uuid))


def module_rec(bias, lo, hi, path, build_id=b""):
    return meta(MODULE, varint(bias) + varint(lo) + varint(hi) + string(path) + string(build_id))


def stack_rec(sid, frames, count=None):
    return meta(STACK, varint(sid) + varint(len(frames) if count is None else count) +
                b"".join(varint(f) for f in frames))


def pycode_rec(cid, minor, first_line, file, qualname, linetable):
    return meta(PYCODE, varint(cid) + varint(minor) + varint(first_line) + string(file) +
                string(qualname) + string(linetable))


def thread_rec(tid, flags, name):
    return meta(THREAD, varint(tid) + varint(flags) + string(name))


def config_rec(depth=64, py_status=0, msg=b""):
    return meta(CONFIG, varint(depth) + varint(py_status) + string(msg))


def torch_block(dev, addr, size, allocated, reserved, stack=0):
    return meta(TORCH_BLOCK, b"".join(varint(v) for v in (dev, addr, zigzag(size), allocated, reserved, stack)), dt=3)


def torch_events():
    """PyTorch's block layer over two segments and an expandable one: splits, frees, an OOM."""
    a, mib = 0x7F0000000000, 1 << 20
    recs = meta(TORCH_CONFIG, string("expandable_segments:True,max_split_size_mb:64") + string("") + string("0"))
    recs += meta(TORCH_STATUS, varint(1) + varint(1) + string("forwarding to /opt/torch/lib/libc10.so"))
    recs += event(ALLOC, ctx=0x10, addr_delta=a, size=20 * mib)
    allocated = 0
    for k, size in enumerate((4, 4, 8, -4, 2, -8)):
        addr = a + [0, 4, 8, 4, 4, 8][k] * mib
        allocated += size * mib
        recs += torch_block(0, addr, size * mib, allocated, 20 * mib, stack=0)
    recs += event(RESERVE, addr_delta=0x1000000000, size=1 << 30)
    recs += event(MEM_MAP, addr_delta=0, size=20 * mib, aux=5, aux2=0)
    recs += torch_block(0, a + 0x1000000000, 16 * mib, allocated + 16 * mib, 40 * mib)
    # A block handed out with its request (torch alloc): 3 MiB + 100 B asked for, 3 MiB + 512 B given.
    recs += meta(TORCH_ALLOC, b"".join(varint(v) for v in (0, a + 12 * mib, 3 * mib + 512, 3 * mib + 100,
                                                            allocated + 19 * mib + 512, 40 * mib, 0)), dt=3)
    # One on a side stream (torch stream alloc): device, address, size, request, stream, totals, stack.
    recs += meta(TORCH_STREAM_ALLOC, b"".join(varint(v) for v in (0, a + 16 * mib, 2 * mib, 2 * mib - 7, 0x55D0C0DE0000,
                                                                   allocated + 21 * mib + 512, 40 * mib, 0)), dt=3)
    recs += meta(REGION, varint(1) + string("step"))
    recs += event(ALLOC, failed=(2, 1 * mib, 64 * mib), size=24 * mib)
    recs += meta(TORCH_OOM, b"".join(varint(v) for v in (0, zigzag(24 * mib), allocated, 20 * mib, mib, 64 * mib, 0)))
    return recs


def pyframe(code_id, instr, entry=False):
    return PY | (PY_ENTRY if entry else 0) | ((code_id & ((1 << 30) - 1)) << 32) | instr


def training_events(n, base_addr=0x7F0000000000, stack=None):
    """A small alloc/free/async/VMM mix with address reuse; returns records."""
    recs = bytearray()
    last = 0
    live = []
    for i in range(n):
        k = i % 6
        if k in (0, 1):
            a = base_addr + (i % 8) * 0x200000
            recs += event(ALLOC, dt=100 + i, addr_delta=a - last, size=(1 << 20) * (1 + i % 5),
                          stack=stack, **({"ctx": 0x5000, "dev": 1} if i == 0 else {}))
            last = a
            live.append(a)
        elif k == 2 and live:
            a = live.pop(0)
            recs += event(FREE, dt=50, addr_delta=a - last)
            last = a
        elif k == 3:
            a = 0x7E0000000000 - i * 4096
            recs += event(ALLOC_ASYNC, dt=20, stream=0x100 + i % 3, addr_delta=a - last, size=4096 * i)
            last = a
        elif k == 4:
            recs += event(MEM_MAP, dt=30, addr_delta=0x200000000 - last, size=2 << 20, aux=7, aux2=0)
            last = 0x200000000
        else:
            recs += event(ALLOC, dt=5, failed=(2, 123456789, 16 << 30), size=1 << 40)
    return recs


def seeds():
    s = {}
    basic = process_rec() + device_rec() + config_rec() + thread_rec(100, 0, b"main")
    events = training_events(24)
    s["empty"] = b""
    s["tiny-magic-only"] = MAGIC
    s["short-header"] = header(pad=False)[:150]
    s["header-only-192"] = header(pad=False)
    s["header-only-256"] = header()
    s["bad-magic"] = trace([(basic + events, {})], raw_magic=b"VRAMTRX\0")
    s["major-2"] = trace([(basic + events, {})], major=2, minor=0)
    s["major-0"] = trace([(basic + events, {})], major=0, minor=99)
    s["minor-newer-unknown-tags"] = trace([(
        basic + meta(0x90, b"future metadata") + record(0xFF, b"\0\0\0") +
        event(100, dt=5, size=7, addr_delta=0x1000, extra=b"future-field") +
        event(ALLOC, dt=5, addr_delta=0x2000, size=64, extra=b"\x01\x02\x03") +
        meta(NOTE, b"tracing stopped: disk full") + meta(END, b""), {})], minor=7, flags=3)
    s["valid-compact"] = trace([(basic + events + meta(END, b""), {})])
    s["valid-unclean"] = trace([(basic + events, {})], flags=0, end_ns=0)
    s["header-size-odd"] = trace([(basic + events, {})], header_size=195)
    s["chunk-size-255"] = trace([(basic, {})], chunk_size=256)[:192] + b"\0" * 4
    hs = bytearray(trace([(basic + events, {})]))
    struct.pack_into("<I", hs, 20, 255)  # chunk_size
    s["chunk-size-too-small"] = bytes(hs)
    struct.pack_into("<I", hs, 20, 65 << 20)
    s["chunk-size-too-large"] = bytes(hs)
    struct.pack_into("<II", hs, 16, 191, 256)  # header_size below sizeof(FileHeader)
    s["header-size-too-small"] = bytes(hs)
    struct.pack_into("<II", hs, 16, 1 << 26, 256)
    s["header-size-huge"] = bytes(hs)
    v = trace([(basic + events, {})])
    s["truncated-mid-chunk"] = v[:-100]
    s["truncated-mid-record"] = trace([(basic + events, {"used": len(basic + events) + 40})])
    # Chunk headers.
    cs = size_for(basic + events)
    s["chunk-bad-magic"] = trace([(basic, {}), (events, {"magic": 0x4B435457})], chunk_size=cs)
    s["chunk-used-past-end"] = trace([(basic, {}), (events, {"used": cs - 31})], chunk_size=cs)
    s["chunk-used-max"] = trace([(basic, {}), (events, {"used": 0xFFFFFFFF})], chunk_size=cs)
    s["chunk-used-zero"] = trace([(basic, {}), (events, {"used": 0})], chunk_size=cs)
    s["chunk-index-mismatch"] = trace([(events, {"index": 7}), (basic, {"index": 0})], chunk_size=cs)
    s["chunk-magic-zero-with-data"] = trace([(basic, {}), (events, {"magic": 0})], chunk_size=cs)
    # Records.
    s["record-len-past-chunk"] = trace([(basic + bytes([ALLOC]) + varint(200) + b"\x05\x18", {})])
    s["record-len-zero"] = trace([(basic + bytes([ALLOC, 0]) + events, {})])
    s["record-tag-zero"] = trace([(basic + b"\0\x03abc" + events, {})])
    s["record-len-varint-overlong"] = trace([(basic + bytes([ALLOC]) + b"\xff" * 11 + b"\x01", {})])
    s["record-len-varint-cut"] = trace([(basic + bytes([ALLOC]) + b"\xff\xff", {})])
    s["varint-max-fields"] = trace([(basic + event(
        ALLOC, dt=(1 << 64) - 1, ctx=(1 << 64) - 1, dev=(1 << 63) - 1, stream=(1 << 64) - 1,
        failed=((1 << 64) - 1, (1 << 64) - 1, (1 << 64) - 1), addr_delta=-(1 << 63),
        size=(1 << 64) - 1, aux=(1 << 64) - 1, aux2=(1 << 64) - 1, stack=(1 << 64) - 1), {})])
    s["varint-overlong-field"] = trace([(basic + record(ALLOC, varint(5) + bytes([F_SIZE]) +
                                                        b"\x80" * 10 + b"\x01") + events, {})])
    s["event-fields-missing"] = trace([(basic + record(ALLOC, varint(5) + bytes([0xFF])) +
                                        record(FREE, varint(5)) + events, {})])
    s["event-every-op"] = trace([(basic + b"".join(
        event(op, dt=op, ctx=0x5000 + op % 3, dev=op % 4, stream=op, addr_delta=op * 4096,
              size=op << 20, aux=op, aux2=(1 << 32) | op) for op in range(1, 128)), {})])
    s["dev-unknown"] = trace([(basic + event(ALLOC, ctx=0, dev=0, addr_delta=0x1000, size=1) +
                               event(ALLOC, ctx=1, dev=1 << 32, addr_delta=0x1000, size=1), {})])
    s["dt-wraparound"] = trace([(basic + event(ALLOC, dt=(1 << 64) - T0 - 5, addr_delta=1, size=1) +
                                 event(FREE, dt=10, addr_delta=0), {}),
                                (events, {"tid": 101, "base_ns": T0 - 1})])
    s["damaged-records-chain"] = trace([(basic + b"".join(record(NOTE, b"\x80") for _ in range(60)) +
                                         b"".join(record(ALLOC, b"\x80") for _ in range(60)) + events, {})])
    # Process and device records.
    s["process-bad-utf8"] = trace([(process_rec(argv=(b"\xff\xfe", b"caf\xc3", b""), exe=b"\xc0\xaf") +
                                    device_rec(name=b"\xed\xa0\x80 GPU") + events, {})])
    s["process-empty-strings"] = trace([(meta(PROCESS, varint(0) + string(b"") + string(b"")) +
                                         meta(PROCESS, varint(1) + string(b"\0\0\0")) +
                                         device_rec(uuid=b"") + device_rec(ordinal=1, uuid=bytes(16)) +
                                         device_rec(ordinal=1) + device_rec(ordinal=(1 << 64) - 1) +
                                         meta(DEVICE, varint(0)) + events, {})])
    s["process-string-len-huge"] = trace([(meta(PROCESS, varint(1) + varint((1 << 64) - 1) + b"x") +
                                           meta(DEVICE, varint(0) + varint(1) + varint(1 << 40)) +
                                           events, {})])
    # Multi-chunk merge.
    t = [(basic + training_events(10), {"tid": 100, "base_ns": T0}),
         (training_events(10), {"tid": 101, "base_ns": T0 + 7}),
         (training_events(10), {"tid": 102, "base_ns": T0}),
         (training_events(10), {"tid": 103, "base_ns": T0 + 10**6}),
         (b"", {"tid": 104, "base_ns": 0}),
         (training_events(3), {"tid": 105, "base_ns": (1 << 64) - 1})]
    s["merge-many-chunks"] = trace(t)
    s["merge-reversed-bases"] = trace(list(reversed(t)))
    # Stacks, modules, Python code.
    mods = (module_rec(0x400000, 0x400000, 0x500000, b"/usr/bin/prog", b"\x12\x34") +
            module_rec(0x7F0000000000, 0x7F0000001000, 0x7F0000100000, b"/lib/libfoo.so") +
            module_rec(0, 0x1000, 0x2000, b"relative/path.so") +
            module_rec(0, 0x1000, 0x2000, b"/../../../../etc/passwd") +
            module_rec((1 << 64) - 1, (1 << 64) - 2, (1 << 64) - 1, b"/x") +
            module_rec(5, 0x9000, 0x1000, b"/backwards") +
            module_rec(0, 0, (1 << 64) - 1, b"/everything", b"\0" * 20) +
            module_rec(0x400000, 0x400000, 0x500000, b"/usr/bin/prog"))
    stacks = (stack_rec(1, [0x400123, 0x7F0000001234, 0x1500]) +
              stack_rec(2, [pyframe(1, 10), pyframe(1, 0xFFFFFFFF, True), 0x400200, pyframe(2, 40)]) +
              stack_rec(3, []) + stack_rec(1, [0xdead]) + stack_rec(4, [0], count=1) +
              stack_rec((1 << 32) + 5, [1, 2, 3]) + stack_rec(0, [0x400100]))
    code = (pycode_rec(1, 10, 12, b"train.py", b"main", bytes([4, 1, 6, 2, 0, 1, 8, 0x80, 10, 0xFF])) +
            pycode_rec(2, 11, 100, b"model.py", b"Model.forward",
                       bytes([0xF0, 0x03, 0xE8, 0x05, 0x04, 0x02, 0xD8, 0x01, 0xF8, 0x80, 0xFF])) +
            pycode_rec(3, 12, 1, b"x.py", b"f", b"\x01\x02") + pycode_rec(4, 9, 1, b"", b"", b"") +
            pycode_rec(5, 13, 5, b"y.py", b"g", bytes([0xE8, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x0F])))
    uses = b"".join(event(ALLOC, dt=10, addr_delta=4096, size=64, stack=i) for i in (1, 2, 3, 4, 5, 6, 99, 0))
    s["stacks-modules-python"] = trace([(basic + mods + code + stacks + uses, {})])
    s["stacks-in-other-chunk"] = trace([(basic + uses, {}), (mods + code + stacks, {"tid": 7, "base_ns": T0 + 10**9})])
    s["stack-count-4096"] = trace([(basic + stack_rec(9, [0x400100 + i for i in range(4096)]) +
                                    event(ALLOC, addr_delta=1, size=1, stack=9), {})], chunk_size=32768)
    s["stack-count-4097"] = trace([(basic + stack_rec(9, [1] * 4097) + event(ALLOC, stack=9), {})],
                                  chunk_size=16384)
    s["stack-count-huge"] = trace([(basic + stack_rec(9, [1, 2], count=(1 << 64) - 1) +
                                    stack_rec(10, [1, 2], count=4000) + event(ALLOC, stack=9) +
                                    event(ALLOC, stack=10), {})])
    s["stack-python-unknown-code"] = trace([(basic + stack_rec(1, [pyframe(77, 3, True), pyframe(78, 0)]) +
                                             event(ALLOC, stack=1), {})])
    s["thread-config-records"] = trace([(thread_rec(100, 1, b"pt_autograd_0") + thread_rec(100, 0, b"renamed") +
                                         thread_rec((1 << 64) - 1, (1 << 64) - 1, b"\xff" * 16) +
                                         config_rec(0, 3, b"python: unsupported 3.14") +
                                         config_rec((1 << 64) - 1, (1 << 64) - 1, b"x" * 100) +
                                         meta(CONFIG, varint(1)) + meta(THREAD, varint(1)) + events, {})])
    s["module-string-cut"] = trace([(meta(MODULE, varint(1) + varint(2) + varint(3) + varint(100) + b"/lib") +
                                     meta(PYCODE, varint(1) + varint(11) + varint(1) + varint(5)) + events, {})])
    # PyTorch's block layer: consistent records, then every way they can disagree with the driver.
    s["torch-blocks"] = trace([(basic + torch_events() + meta(END, b""), {})])
    big = (1 << 64) - 1
    s["torch-hostile"] = trace([(basic + event(ALLOC, ctx=0x10, addr_delta=0x7F0000000000, size=2 << 20) +
                                 torch_block(0, 0x7F0000000000, 1 << 20, 1 << 20, 2 << 20) +
                                 torch_block(0, 0x7F0000000000 + 512, 1 << 20, 2 << 20, 2 << 20) +
                                 torch_block(200, big - 10, -(1 << 63), big, big) +
                                 torch_block(0, big, 1 << 62, 0, 0) + torch_block(0, 0, -512, 0, 0) +
                                 meta(TORCH_BLOCK, varint(0)) + meta(TORCH_OOM, varint(3)) +
                                 meta(TORCH_ALLOC, b"".join(varint(v) for v in (0, big, 512, 1024, big, big, 0))) +
                                 meta(TORCH_ALLOC, b"".join(varint(v) for v in (0, 1 << 40, big, 7, 0, 0, 3))) +
                                 meta(TORCH_ALLOC, varint(1)) +
                                 meta(TORCH_STREAM_ALLOC, b"".join(varint(v) for v in (0, big, 512, 1024, big, big, big, 0))) +
                                 meta(TORCH_STREAM_ALLOC, b"".join(varint(v) for v in (127, 1 << 40, big, 7, 0, 0, 0, 3))) +
                                 meta(TORCH_STREAM_ALLOC, varint(1)) +
                                 meta(TORCH_STATUS, varint(9) + varint(1) + string("x" * 40)) +
                                 meta(TORCH_STATUS, varint(2) + varint(0) + varint(1 << 40)) +
                                 meta(TORCH_CONFIG, varint(1 << 30)) +
                                 meta(TORCH_OOM, b"".join(varint(v) for v in (0, zigzag(-(1 << 63)), big, big, big, 0, 7))) +
                                 event(FREE, addr_delta=0), {})])
    # The real layout: a 64 KiB header and 64 KiB chunks.
    s["layout-64k-valid"] = trace([(basic + events + meta(END, b""), {})], header_size=65536, chunk_size=65536)
    return s


def crashes():
    """Inputs that trip known bugs (see tests/fuzz/REGRESSIONS.md; kept in corpus/ as regress-*)."""
    c = {}
    basic = process_rec() + device_rec()
    # trace_reader.cpp advance(): int64_t(varint) - 1 overflows for a device varint of 2^63.
    c["ubsan-device-ordinal-overflow"] = trace([(basic + event(ALLOC, ctx=1, dev=1 << 63, addr_delta=1, size=1), {})])
    # python_lines.cpp: the running line number is an int; first_line near INT_MAX plus a delta
    # overflows (3.10 and 3.11+ tables).
    big = (1 << 31) - 1
    c["ubsan-python-line-overflow-310"] = trace([(basic + pycode_rec(1, 10, big, b"a.py", b"f", bytes([2, 1, 2, 1])) +
                                                  stack_rec(1, [pyframe(1, 3)]) + event(ALLOC, stack=1), {})])
    c["ubsan-python-line-overflow-311"] = trace([(basic + pycode_rec(1, 11, big, b"a.py", b"f",
                                                                     bytes([0xE8, 0x02, 0xE8, 0x02])) +
                                                  stack_rec(1, [pyframe(1, 3)]) + event(ALLOC, stack=1), {})])
    # trace_reader.cpp advance(): one recursive call per consecutive damaged record; one 64 KiB
    # chunk of them (3 bytes each: ~21800 calls) overflows the stack of an ASan or -O0 build.
    # (The header allows chunks of up to 64 MiB: 22 million calls, whatever the optimizer does.)
    n = ((1 << 16) - 32) // 3
    c["stack-overflow-damaged-records"] = trace([(b"".join([record(NOTE, b"\x80")] * n), {})], chunk_size=1 << 16)
    # trace_reader.cpp decode_stack_meta(): each module record is compared with every module
    # kept so far (and Symbolizer::module_for scans them all per address): quadratic. 18832
    # module records in a 256 KiB chunk take 0.6 s in a Release build and time out (> 10 s)
    # under the fuzzer; 1 MiB takes 20 s, a 64 MiB chunk hours.
    cs = 256 << 10
    recs = bytearray()
    i = 0
    while True:
        r = module_rec(0, 0x1000 + i * 16, 0x1000 + i * 16 + 8, b"/m")
        if len(recs) + len(r) > cs - 32:
            break
        recs += r
        i += 1
    c["timeout-module-dedup-quadratic"] = trace([(bytes(recs), {})], chunk_size=cs)
    # Not a crash: wrong module. /old (chunk 0, t=1 s) and /new (chunk 1, t=2 s) cover the same
    # range; an event at t=4 s should resolve to /new but resolves to /old, because
    # TraceReader::load_stacks() decodes module records with t_ns = 0 (and next() then dedups
    # them, so their real time is never stored): `vramtrace dump` shows "module": "/old".
    c0 = (process_rec() + module_rec(0, 0x1000, 0x2000, b"/old") + stack_rec(1, [0x1500]) +
          event(ALLOC, dt=3 * 10**9, addr_delta=0x1000, size=1, stack=1))
    c1 = meta(MODULE, varint(0) + varint(0x1000) + varint(0x2000) + string(b"/new") + string(b""), dt=10**9)
    c["wrong-module-load-stacks-time"] = trace([(c0, {"tid": 100, "base_ns": T0}), (c1, {"tid": 101, "base_ns": T0 + 1})])
    # perfetto_export.cpp names(): the sort index 1 + ordinal was an int: a device record with
    # ordinal 2^31 - 1 overflows (vramtrace export --perfetto).
    c["ubsan-perfetto-device-ordinal-intmax"] = trace([(process_rec() + device_rec(ordinal=(1 << 31) - 1) +
                                                        event(ALLOC, ctx=1, dev=1, addr_delta=0x1000, size=1), {})])
    # perfetto_export.cpp Writer::ts(): int64_t(t) - int64_t(t0) overflows for a time 2^63 past
    # the start (a failed allocation is always drawn, with its time).
    c["ubsan-perfetto-time-far"] = trace([(basic + event(ALLOC, dt=1 << 63, failed=(2, 1, 2), size=1 << 40), {})])
    # compare.cpp diff_runs()/cmd_diff.cpp: a site of 2^63 bytes is INT64_MIN as int64_t; its change
    # is negated (signed_bytes) and llabs'ed (the sort): undefined (vramtrace diff, check --baseline).
    c["ubsan-diff-size-2pow63"] = trace([(basic + stack_rec(1, [0x400100]) +
                                          event(ALLOC, ctx=1, dev=1, addr_delta=0x1000, size=1 << 63, stack=1), {})])
    return c


def shrink_real(path):
    d = Path(path).read_bytes()
    hs, cs = struct.unpack_from("<II", d, 16)
    chunks = []
    for i in range((len(d) - hs) // cs):
        off = hs + i * cs
        magic, used = struct.unpack_from("<II", d, off)
        if magic:
            chunks.append((i, d[off:off + 32 + used]))
    last = max(i for i, _ in chunks)
    full = d[:hs + (last + 1) * cs]
    ncs = max(256, (max(len(c) for _, c in chunks) + 255) // 256 * 256)
    compact = bytearray(d[:192] + bytes(64))
    struct.pack_into("<II", compact, 16, 256, ncs)
    slots = [bytes(ncs)] * (last + 1)
    for i, c in chunks:
        slots[i] = c + bytes(ncs - len(c))
    return full, bytes(compact) + b"".join(slots)


def main(argv):
    args = argv[1:]
    want_crashes = "--crashes" in args
    args = [a for a in args if a != "--crashes"]
    real = []
    while args and args[0] == "--real":
        real.append((args[1], args[2]))
        args = args[3:]
    if len(args) != 1:
        sys.exit(__doc__)
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    files = crashes() if want_crashes else seeds()
    for path, name in real:
        full, compact = shrink_real(path)
        files[f"real-{name}-full"] = full
        files[f"real-{name}-compact"] = compact
    for name, data in files.items():
        (out / name).write_bytes(data)
    print(f"{len(files)} files, {sum(len(d) for d in files.values())} bytes in {out}")


if __name__ == "__main__":
    main(sys.argv)
