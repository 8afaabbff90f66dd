"""The project's metadata, in one place: the wheel's METADATA and entry points. The version is
CMakeLists.txt's `project(vramtrace VERSION ...)`, as `vramtrace --version` prints it."""
import os
import re

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "vramtrace"
SUMMARY = ("Records every CUDA memory operation of an unmodified process (PyTorch's tensors included) "
           "and explains its GPU memory: peak, leaks, fragmentation, why an OOM happened")
ENTRY_POINTS = """[console_scripts]
vramtrace = vramtrace.__main__:main

[pytest11]
vramtrace = pytest_vramtrace
"""
# The Python packages the wheel ships: (name in the wheel, folder in the source tree).
PACKAGES = [("vramtrace", "wheel/vramtrace"), ("pytest_vramtrace", "pytest_plugin/pytest_vramtrace")]


def version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        return re.search(r"project\(vramtrace VERSION ([0-9.]+)", f.read()).group(1)


def metadata():
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.8\nClassifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Framework :: Pytest\nProvides-Extra: pytest\nRequires-Dist: pytest>=7; extra == \"pytest\"\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, version(), SUMMARY, readme))
