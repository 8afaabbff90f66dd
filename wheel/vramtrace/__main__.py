"""`python -m vramtrace ARGS` and the `vramtrace` console script: the package's binary, exec'ed
in place of this interpreter, so signals, the terminal and the exit status are the command's."""
import os
import sys

from . import binary


def main():
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("vramtrace: the command is missing from the installed package (%s); reinstall it\n" % exe)
        return 2
    os.execv(exe, [exe] + sys.argv[1:])
    return 2  # (not reached)


if __name__ == "__main__":
    sys.exit(main())
