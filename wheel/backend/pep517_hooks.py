"""vramtrace's PEP 517 build backend (pyproject.toml: build-backend = "pep517_hooks", backend-path =
["wheel/backend"]). It needs nothing but the standard library: no setuptools, no wheel package, so
`pip install .` and `pip wheel .` work offline under build isolation with any Python 3.8+.

The wheel: the CLI and libvramtrace.so from a portable CMake build (cmake_build.py) with the
libraries the library carries under names of their own (cmake/carried_libraries.cmake), the
`vramtrace` Python package (the console script) and the pytest plugin; tagged py3-none-
manylinux_2_X_<machine> from what the binaries really need (elf_needs.py), the build failing when
they need more than the wheel promises. An sdist is the source tree's tracked files.
"""
import io
import os
import subprocess
import tarfile

import cmake_build
import elf_needs
import project
import wheel_archive


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _python_files(package, folder):
    root = os.path.join(project.SOURCE, folder)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            yield package + "/" + name, os.path.join(root, name)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = cmake_build.build(project.SOURCE)
    with open(os.path.join(build, "wheel_libraries.txt")) as f:
        libraries = [line.strip() for line in f if line.strip()]
    binaries = [("vramtrace/bin/vramtrace", os.path.join(build, "bin", "vramtrace"))]
    binaries += [("vramtrace/lib/" + lib, os.path.join(build, "lib", lib)) for lib in libraries]
    tag = elf_needs.platform_tag([disk for _, disk in binaries], set(libraries))
    files = list(binaries)
    for package, folder in project.PACKAGES:
        files += _python_files(package, folder)
    os.makedirs(wheel_directory, exist_ok=True)
    return wheel_archive.write(wheel_directory, tag, files)


def _tracked_files():
    try:
        out = subprocess.run(["git", "-C", project.SOURCE, "ls-files", "-z"], capture_output=True, check=True).stdout
        return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(project.SOURCE, f))]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything but build output
        found = []
        for root, dirs, names in os.walk(project.SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build", "Testing"))]
            found += [os.path.relpath(os.path.join(root, n), project.SOURCE) for n in names]
        return sorted(found)


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (project.NAME, project.version())
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in _tracked_files():
            tar.add(os.path.join(project.SOURCE, rel), arcname=base + "/" + rel, recursive=False)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = project.metadata().encode()
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
