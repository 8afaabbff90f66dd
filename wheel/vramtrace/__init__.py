"""vramtrace as a Python package: the `vramtrace` command and libvramtrace.so of this wheel.

`pip install vramtrace` puts the command on PATH (`vramtrace run -- python train.py`); `python -m
vramtrace ...` is the same command. The binaries live in this package (bin/, lib/: the CLI
finds the library beside itself) and depend on nothing but glibc (README: the oldest supported).
The pytest plugin (`@pytest.mark.limit_vram`) is the pytest_vramtrace package of the same wheel.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

try:
    from importlib.metadata import version as _version

    __version__ = _version("vramtrace")
except Exception:  # not installed (the source tree)
    __version__ = "unknown"


def binary():
    """The vramtrace command of this package."""
    return os.path.join(_HERE, "bin", "vramtrace")


def library():
    """libvramtrace.so of this package (what `vramtrace run` preloads)."""
    return os.path.join(_HERE, "lib", "libvramtrace.so")
