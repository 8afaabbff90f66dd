"""The wheel backend's tag rule (wheel/backend/elf_needs.py) on real binaries: the wheel's own
earn the tag it carries, and the build fails, naming the file and the need, when a binary needs a
newer glibc than promised, a library that is neither glibc's nor carried, or libstdc++.
Usage: elf_needs_test.py UNPACKED_WHEEL_DIR TAG A_PROGRAM_THAT_LINKS_LIBSTDCXX (build/bin/vramtrace)"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "wheel", "backend"))
import elf_needs  # noqa: E402

unpacked, tag, cxx_program = sys.argv[1:4]
lib = os.path.join(unpacked, "vramtrace", "lib")
carried = set(os.listdir(lib))
binaries = [os.path.join(unpacked, "vramtrace", "bin", "vramtrace")] + [os.path.join(lib, f) for f in sorted(carried)]
failures = []


def refused(files, carried, *expected):
    try:
        got = elf_needs.platform_tag(files, carried)
    except SystemExit as e:
        message = str(e)
        for text in expected:
            if text not in message:
                failures.append("the refusal does not say %r: %s" % (text, message))
        return
    failures.append("accepted (%s), expected a refusal saying %s" % (got, expected))


if elf_needs.platform_tag(binaries, carried) != tag:
    failures.append("the binaries earn %s, the wheel says %s" % (elf_needs.platform_tag(binaries, carried), tag))
# A promise one glibc lower than what the binaries need.
need = max(elf_needs.Needs(b).glibc() for b in binaries)
saved = elf_needs.GLIBC_PROMISE
elf_needs.GLIBC_PROMISE = (need[0], need[1] - 1)
refused(binaries, carried, "needs GLIBC_%d.%d" % need, "newer than the %d.%d the wheel promises" % elf_needs.GLIBC_PROMISE)
elf_needs.GLIBC_PROMISE = saved
# A carried library left out of the wheel (libunwind's liblzma).
lzma = [f for f in carried if f.startswith("liblzma-")][0]
refused(binaries, carried - {lzma}, "needs %s, which is neither glibc's nor carried" % lzma)
# A program linked against the shared libstdc++ (the CLI of a build that is not portable).
refused([cxx_program], set(), "needs libstdc++.so.6", "needs libstdc++ (GLIBCXX_")
if failures:
    print("FAIL: " + "\n".join(failures))
    sys.exit(1)
print("ok elf_needs: %s earned; a lower promise, a missing carried library and libstdc++ refused" % tag)
