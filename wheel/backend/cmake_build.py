"""The wheel's binaries, built by CMake: a portable build (VRAMTRACE_PORTABLE, cmake/portable.cmake)
of the three targets the wheel ships and nothing else (no tests, benchmarks, doctor probes).

Environment: VRAMTRACE_WHEEL_BUILD_DIR (default build-wheel/ in the source tree; a folder already
configured with VRAMTRACE_PORTABLE=ON is reused, and only what changed is rebuilt),
CMAKE_BUILD_PARALLEL_LEVEL (jobs; default: every CPU), CUDA_HOME / CUDAToolkit_ROOT (the toolkit
whose headers are used: only its headers).
"""
import os
import shutil
import subprocess
import sys

TARGETS = ["vramtrace", "vramtrace_audit", "vramtrace_cli"]


def toolkit_headers():
    """The CUDA toolkit the build would use, or None. Only cuda.h and cupti.h are needed."""
    roots = [os.environ.get(v) for v in ("CUDAToolkit_ROOT", "CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots += ["/usr/local/cuda", "/usr"]
    for root in filter(None, roots):
        for inc in ("include", "targets/x86_64-linux/include", "targets/sbsa-linux/include"):
            if os.path.isfile(os.path.join(root, inc, "cuda.h")):
                return root
    return None


def fail(message):
    sys.stderr.write("vramtrace wheel: %s\n" % message)
    raise SystemExit(1)


def build(source):
    """Configures (once) and builds the wheel's targets; returns the build folder."""
    out = os.environ.get("VRAMTRACE_WHEEL_BUILD_DIR") or os.path.join(source, "build-wheel")
    cache = os.path.join(out, "CMakeCache.txt")
    for tool in ("cmake", "c++", "objdump", "patchelf"):
        if not shutil.which(tool):
            fail("building from source needs %s (apt-get install cmake g++ binutils patchelf); "
                 "`pip install vramtrace` gets a prebuilt wheel that needs nothing" % tool)
    if os.path.exists(cache):
        with open(cache) as f:
            if "VRAMTRACE_PORTABLE:BOOL=ON" not in f.read():
                fail("%s is not configured with -DVRAMTRACE_PORTABLE=ON" % out)
    else:
        root = toolkit_headers()
        if not root:
            fail("building from source needs the CUDA toolkit's headers (cuda.h, cupti.h; no CUDA library "
                 "is linked): set CUDA_HOME to a toolkit, or install one (NVIDIA's cuda-toolkit packages)")
        configure = ["cmake", "-S", source, "-B", out, "-DCMAKE_BUILD_TYPE=Release", "-DVRAMTRACE_BUILD_TESTS=OFF",
                     "-DVRAMTRACE_BUILD_BENCH=OFF", "-DVRAMTRACE_PORTABLE=ON", "-DCUDAToolkit_ROOT=" + root]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        if subprocess.run(configure, stdout=sys.stderr).returncode != 0:
            fail("CMake could not configure the build (its message is above; scripts/deps.sh lists the "
                 "Debian packages a source build needs)")
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
    if subprocess.run(["cmake", "--build", out, "-j", jobs, "--target"] + TARGETS, stdout=sys.stderr).returncode != 0:
        fail("the build failed (above)")
    return out
