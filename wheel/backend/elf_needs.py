"""What an ELF file needs from the system, and the manylinux tag a set of them earns (PEP 600).

A binary may need glibc's libraries and libgcc_s.so.1 (which glibc itself loads), plus the
libraries carried beside it; glibc symbol versions no newer than the wheel promises; libgcc_s
versions no newer than GCC 4.8 (every manylinux_2_17+ system has them); nothing of libstdc++ (the
CLI links it statically, libvramtrace.so must not link it: docs/architecture.md). Read with
binutils' `objdump -p`, which the build has anyway.

    python3 elf_needs.py FILE...   prints each file's needs and the tag they earn (tests use it).
"""
import os
import re
import subprocess
import sys

# The newest glibc the wheel may need: its tag is manylinux_2_34 at most. A change that needs
# more fails the build (raise it here, deliberately, with the README's "Supported systems").
GLIBC_PROMISE = (2, 34)
# The oldest tag written, even when less would do: pip 20.3+ reads manylinux_2_17 and newer.
GLIBC_FLOOR = (2, 17)
SYSTEM_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                    "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libgcc_s.so.1"}
GCC_PROMISE = (4, 8, 0)
MACHINES = {62: "x86_64", 183: "aarch64"}  # ELF e_machine


class Needs:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            head = f.read(20)
        if head[:4] != b"\x7fELF":
            raise ValueError("%s is not an ELF file" % path)
        self.machine = MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")
        out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True, check=True).stdout
        self.needed = re.findall(r"^\s+NEEDED\s+(\S+)", out, re.M)
        self.versions = {}  # library -> set of version names
        refs = out.split("Version References:", 1)[1] if "Version References:" in out else ""
        library = None
        for line in refs.splitlines():
            m = re.match(r"\s+required from (\S+):", line)
            if m:
                library = m.group(1)
                continue
            m = re.match(r"\s+0x[0-9a-f]+ 0x[0-9a-f]+ \d+ (\S+)", line)
            if m and library:
                self.versions.setdefault(library, set()).add(m.group(1))

    def glibc(self):
        """The newest GLIBC_x.y version it needs, as a tuple."""
        found = [version_tuple(v[6:]) for vs in self.versions.values() for v in vs if v.startswith("GLIBC_2")]
        return max(found, default=(2, 0))

    def problems(self, carried):
        """Why this file breaks the promise, one line each (none: it keeps it)."""
        name = os.path.basename(self.path)
        out = []
        for lib in self.needed:
            if lib not in SYSTEM_LIBRARIES and lib not in carried:
                out.append("%s needs %s, which is neither glibc's nor carried in the wheel" % (name, lib))
        if self.glibc() > GLIBC_PROMISE:
            newest = "GLIBC_" + ".".join(map(str, self.glibc()))
            out.append("%s needs %s, newer than the %s the wheel promises (elf_needs.py GLIBC_PROMISE)"
                       % (name, newest, ".".join(map(str, GLIBC_PROMISE))))
        for lib, versions in self.versions.items():
            for v in sorted(versions):
                if v.startswith("GCC_") and version_tuple(v[4:]) > GCC_PROMISE:
                    out.append("%s needs %s from %s (GCC 4.8's are the most promised)" % (name, v, lib))
                if v.startswith(("GLIBCXX_", "CXXABI_")):
                    out.append("%s needs libstdc++ (%s): link it statically or not at all" % (name, v))
        return out


def version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text))


def platform_tag(files, carried):
    """The manylinux tag `files` earn together; SystemExit naming every broken promise."""
    needs = [Needs(f) for f in files]
    problems = [p for n in needs for p in n.problems(carried)]
    machines = {n.machine for n in needs}
    if len(machines) != 1 or "unknown" in machines:
        problems.append("the binaries are for %s, not one known machine" % ", ".join(sorted(machines)))
    if problems:
        raise SystemExit("vramtrace wheel: the binaries break the manylinux promise:\n  " + "\n  ".join(problems))
    glibc = max([GLIBC_FLOOR] + [n.glibc() for n in needs])
    return "manylinux_%d_%d_%s" % (glibc[0], glibc[1], machines.pop())


if __name__ == "__main__":
    files = sys.argv[1:]
    if not files:
        sys.exit("usage: elf_needs.py FILE...")
    carried = {os.path.basename(f) for f in files if ".so" in os.path.basename(f)}
    for f in files:
        n = Needs(f)
        print("%s: needs %s; newest glibc version %s" % (f, " ".join(n.needed) or "nothing",
                                                          ".".join(map(str, n.glibc()))))
    print(platform_tag(files, carried))
