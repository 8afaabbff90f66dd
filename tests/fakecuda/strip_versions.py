#!/usr/bin/env python3
"""Copies a shared object without its symbol-version entries in the dynamic section (DT_VERSYM,
DT_VERNEED(NUM), DT_VERDEF(NUM)): the loader then keeps no version table for it, as for the CUDA
toolkit's stub libcuda.so, and dlvsym() finds its unversioned functions whatever version is
asked (with a table it finds none). tests/CMakeLists.txt makes such a copy of the simulated
driver for the dlvsym test (tests/e2e/ops_test.cpp). ELF64 little-endian only.
Usage: strip_versions.py IN OUT"""
import struct
import sys

VERSION_TAGS = {0x6FFFFFF0, 0x6FFFFFFE, 0x6FFFFFFF, 0x6FFFFFFC, 0x6FFFFFFD}


def main(src, dst):
    b = bytearray(open(src, "rb").read())
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        sys.exit(f"strip_versions.py: {src}: not a little-endian ELF64 file")
    (phoff,) = struct.unpack_from("<Q", b, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
    dropped = 0
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", b, phoff + i * phentsize)
        if p_type != 2:  # PT_DYNAMIC
            continue
        entries = [struct.unpack_from("<qQ", b, p_offset + k * 16) for k in range(p_filesz // 16)]
        kept = [e for e in entries if e[0] not in VERSION_TAGS]
        dropped += len(entries) - len(kept)
        kept += [(0, 0)] * (len(entries) - len(kept))  # DT_NULL padding at the end
        for k, (tag, val) in enumerate(kept):
            struct.pack_into("<qQ", b, p_offset + k * 16, tag, val)
    if not dropped:
        sys.exit(f"strip_versions.py: {src}: no version entries to drop")
    with open(dst, "wb") as f:
        f.write(b)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
