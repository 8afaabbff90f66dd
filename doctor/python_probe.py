# vramtrace doctor's Python probe: which CUDA runtimes (libcudart), CUPTI and NVML libraries
# would this interpreter's frameworks load? Packages are located with importlib.util.find_spec
# and their files read; torch, cupy and jax are never imported (slow, and importing may
# initialise CUDA). Prints one JSON object on stdout. Runs on Python 3.6 and later.
import importlib.util
import json
import os
import re
import sys

# Top-level modules that ship or locate CUDA libraries. jax's CUDA support lives in plugins.
FRAMEWORKS = ["torch", "cupy", "cupy_backends", "jax", "jaxlib", "jax_plugins",
              "jax_cuda12_plugin", "jax_cuda12_pjrt", "jax_cuda13_plugin", "jax_cuda13_pjrt",
              "tensorflow"]
# torch bundles hashed copies (libcudart-9c3f1a.so.11.0); NVIDIA's wheels plain sonames.
KINDS = [("cudart", re.compile(r"^libcudart(-[0-9a-f]+)?\.so(\.[0-9]+)*$")),
         ("cupti", re.compile(r"^libcupti(-[0-9a-f]+)?\.so(\.[0-9]+)*$")),
         ("nvml", re.compile(r"^libnvidia-ml\.so(\.[0-9]+)*$"))]
SKIP_DIRS = {"__pycache__", "include", "test", "tests", "testing", "share", "bin"}
MAX_DEPTH = 4


def kind_of(name):
    for kind, pattern in KINDS:
        if pattern.match(name):
            return kind
    return None


def package_dirs(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # a broken package must not stop the probe
        return []
    if spec is None:
        return []
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin and os.path.isfile(spec.origin):
        dirs = [os.path.dirname(spec.origin)]
    return [os.path.realpath(d) for d in dirs if os.path.isdir(d)]


libraries = {}  # realpath -> entry


def add_library(path, kind, owner):
    real = os.path.realpath(path)
    entry = libraries.setdefault(real, {"path": path, "real_path": real, "kind": kind, "owners": []})
    if owner not in entry["owners"]:
        entry["owners"].append(owner)


def scan(directory, owner, depth=0):
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        try:
            if e.is_dir():
                if depth < MAX_DEPTH and e.name not in SKIP_DIRS:
                    scan(e.path, owner, depth + 1)
            else:
                kind = kind_of(e.name)
                if kind:
                    add_library(e.path, kind, owner)
        except OSError:
            pass


def torch_cuda(directory):
    # torch/version.py: cuda: Optional[str] = '12.4' (None for CPU builds).
    try:
        with open(os.path.join(directory, "version.py")) as f:
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([0-9.]+)['\"]", f.read(), re.M)
            return m.group(1) if m else None
    except OSError:
        return None


def distributions():
    try:
        import importlib.metadata as md  # 3.8+
    except ImportError:
        return []
    out = []
    try:
        for d in md.distributions():
            name = (d.metadata["Name"] or "").lower()
            if name in ("torch", "jax", "jaxlib", "tensorflow") or name.startswith(("cupy", "jax-cuda", "jax_cuda", "nvidia-")):
                out.append({"name": name, "version": d.version})
    except Exception:
        pass
    return sorted(out, key=lambda d: d["name"])


def dist_version(dists, name):
    for d in dists:
        if d["name"] == name:
            return d["version"]
    return None


def main():
    dists = distributions()
    frameworks = []
    for name in FRAMEWORKS:
        dirs = package_dirs(name)
        if not dirs:
            continue
        # cupy's distribution names its CUDA (cupy-cuda12x); the others match the module name.
        dist = name.replace("_", "-")
        if name == "cupy":
            dist = next((d["name"] for d in dists if d["name"].startswith("cupy")), "cupy")
        fw = {"name": name, "dirs": dirs, "distribution": dist, "version": dist_version(dists, dist)}
        if name == "torch":
            fw["cuda"] = torch_cuda(dirs[0])
        frameworks.append(fw)
        for d in dirs:
            scan(d, name)
    # NVIDIA's pip wheels: <site>/nvidia/<component>/lib (CUDA 12) or nvidia/cu13/lib (CUDA 13).
    nvidia_dirs = set(package_dirs("nvidia"))
    for p in sys.path:
        candidate = os.path.join(p or ".", "nvidia")
        if os.path.isdir(candidate):
            nvidia_dirs.add(os.path.realpath(candidate))
    for nv in sorted(nvidia_dirs):
        try:
            components = sorted(os.listdir(nv))
        except OSError:
            continue
        for comp in components:
            for sub in ("lib", "lib64"):
                d = os.path.join(nv, comp, sub)
                if os.path.isdir(d):
                    scan(d, "nvidia/" + comp, MAX_DEPTH)
    print(json.dumps({
        "python": {"executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3],
                   "prefix": sys.prefix},
        "frameworks": frameworks,
        "libraries": sorted(libraries.values(), key=lambda e: e["path"]),
        "distributions": dists,
    }))


main()
