"""The build of the vramtrace wheel (pyproject.toml): CMake builds the preload library and the CLI
with VRAMTRACE_PORTABLE (cmake/portable.cmake), and they go into the `vramtrace` package as bin/
and lib/, with the shared libraries libvramtrace.so needs that are not glibc's (libunwind,
liblzma), found by its RUNPATH $ORIGIN. The wheel is tagged py3-none-<platform>: the binaries do
not depend on the Python version.

Environment: VRAMTRACE_WHEEL_BUILD_DIR (the CMake build folder, default build-wheel/ here; one
already configured, with VRAMTRACE_PORTABLE on, is used as it is: only its two targets are built),
CMAKE_BUILD_PARALLEL_LEVEL (build jobs), CUDA_HOME (the toolkit whose headers are used).
"""
import os
import re
import shutil
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # building an sdist needs no wheel package
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "CMakeLists.txt")) as f:
    VERSION = re.search(r"project\(vramtrace VERSION ([0-9.]+)", f.read()).group(1)
GLIBC = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "libgcc_s.so")


def needed(path):
    """Shared libraries `path` loads that are not part of glibc (and libgcc_s): (soname, file)."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and not m.group(1).startswith(GLIBC):
            libs.append((m.group(1), m.group(2)))
    return libs


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        build = os.environ.get("VRAMTRACE_WHEEL_BUILD_DIR") or os.path.join(HERE, "build-wheel")
        cache = os.path.join(build, "CMakeCache.txt")
        if os.path.exists(cache):  # a configured build (the developer's, or ctest's): only its two targets
            with open(cache) as f:
                if "VRAMTRACE_PORTABLE:BOOL=ON" not in f.read():
                    raise SystemExit("vramtrace wheel: %s is not configured with -DVRAMTRACE_PORTABLE=ON" % build)
        else:
            configure = ["cmake", "-S", HERE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DVRAMTRACE_BUILD_TESTS=OFF",
                         "-DVRAMTRACE_BUILD_BENCH=OFF", "-DVRAMTRACE_PORTABLE=ON"]
            if shutil.which("ccache"):
                configure += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
            subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.run(["cmake", "--build", build, "--target", "vramtrace", "vramtrace_audit", "vramtrace_cli", "-j", jobs],
                       check=True)
        pkg = os.path.join(self.build_lib, "vramtrace")
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        os.makedirs(os.path.join(pkg, "lib"), exist_ok=True)
        shutil.copy2(os.path.join(build, "bin", "vramtrace"), os.path.join(pkg, "bin", "vramtrace"))
        lib = os.path.join(build, "lib", "libvramtrace.so")
        shutil.copy2(lib, os.path.join(pkg, "lib", "libvramtrace.so"))
        # The optional LD_AUDIT module (docs/interception.md): libc only.
        shutil.copy2(os.path.join(build, "lib", "libvramtrace_audit.so"), os.path.join(pkg, "lib", "libvramtrace_audit.so"))
        for soname, path in needed(lib):  # libunwind.so.8 and what it needs
            shutil.copy2(os.path.realpath(path), os.path.join(pkg, "lib", soname))
        for soname, _ in needed(os.path.join(build, "bin", "vramtrace")):
            raise SystemExit("vramtrace wheel: the CLI needs %s, which VRAMTRACE_PORTABLE should have linked in" % soname)


cmdclass = {"build_py": BuildWithCMake}
if bdist_wheel:

    class PlatformWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False  # it carries binaries

        def get_tag(self):
            return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")

    cmdclass["bdist_wheel"] = PlatformWheel

# setuptools' own build folder is not CMake's build/ (it would write into build/lib).
setup(version=VERSION, cmdclass=cmdclass, options={"build": {"build_base": "build-python"}})
