#!/usr/bin/env bash
# Fetches Debian's CUDA build of PyTorch (trixie's python3-torch-cuda 2.6, built for CUDA 12.4) with
# trixie's CPython 3.13 as .debs, and unpacks them into a cache folder with dpkg-deb -x. Nothing is
# installed and the machine's apt configuration is not touched: a private sources.list, lists and
# archive cache live in the cache folder. Idempotent (what is there is kept), and locked (two
# builds may set up at once).
#
#   tests/realtorch/fetch.sh            -> prints the python3.13 launcher's path
#   tests/realtorch/fetch.sh --newest-memory-viz -> prints the path of the newest PyTorch's
#                                        torch/cuda/_memory_viz.py (sid's python3-torch)
#   tests/realtorch/fetch.sh --newest   -> prints a folder with the libraries of the newest PyTorch in
#                                          sid (a CPU build: libc10, libtorch_cpu, libtorch_python)
#
# Cache: $VRAMTRACE_TORCH_CACHE (default ~/.cache/vramtrace/realtorch). Writes versions.txt there
# (every package and version unpacked) and fetch.log. VT_REALTORCH_CUDA_LIBS=real also fetches
# NVIDIA's CUDA 12.4 libraries from non-free (750 MB more; real cuBLAS does not run on the
# simulated driver: a manual probe only); the default, stub, fetches nothing non-free.
# Exit 3 with one line on stderr when the packages cannot be had (no mirror, no network, a package
# missing from the suite): the caller decides whether that is a skip or a failure.
set -euo pipefail
cache=${VRAMTRACE_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vramtrace/realtorch}
mode=${VT_REALTORCH_CUDA_LIBS:-stub}
newest=0
[[ ${1:-} == --newest ]] && newest=1
[[ ${1:-} == --newest-memory-viz ]] && newest=2
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
log=$cache/fetch.log
say() { echo "fetch: $*" | tee -a "$log" >&2; }
fail() { echo "fetch: $*" | tee -a "$log" >&2; exit 3; }

# The machine's own Debian mirror (from its apt configuration; never named here), or VT_REALTORCH_MIRROR.
mirror=${VT_REALTORCH_MIRROR:-$(grep -hoE '^(URIs:|deb) +[^ []+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  awk '{print $2}' | grep -v -- '-security' | head -n 1 || true)}
[[ -n $mirror ]] || mirror=$(grep -hoE '^deb \[[^]]*\] +[^ ]+' /etc/apt/sources.list 2>/dev/null | awk '{print $NF}' | head -n 1 || true)
[[ -n $mirror ]] || fail "no Debian mirror in this machine's apt configuration (set VT_REALTORCH_MIRROR)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || fail "apt-get and dpkg-deb are needed (a Debian machine)"

# apt with a private configuration for `suite` under $cache/apt-<suite>; lists refreshed once a day.
apt_for() {
  local suite=$1 dir=$cache/apt-$1
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main contrib non-free" >"$dir/sources.list"
  O=(-o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$dir/lists"
     -o Dir::Cache="$dir/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  if [[ -z $(find "$dir/lists" -maxdepth 1 -name '*_InRelease' -mmin -1440 2>/dev/null) ]]; then
    apt-get "${O[@]}" update -qq >>"$log" 2>&1 || fail "Debian's $suite suite cannot be reached ($(tail -n 1 "$log"))"
    # (apt-get update succeeds when it fetched nothing: the lists say whether it did)
    [[ -n $(find "$dir/lists" -maxdepth 1 -name '*_InRelease' -mmin -1440 2>/dev/null) ]] ||
      fail "Debian's $suite suite cannot be reached at $mirror ($(grep -m1 -E '^(W|E):' "$log" | cut -c1-160))"
  fi
}
# Downloads into `debs` the packages not there yet (by name: a newer version in the lists does not
# replace one already fetched, so the cache stays usable offline).
download() {
  local debs=$1; shift
  mkdir -p "$debs"
  local missing=() p
  for p in "$@"; do ls "$debs/${p}_"*.deb >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  (cd "$debs" && apt-get "${O[@]}" download -q "${missing[@]}" >>"$log" 2>&1) ||
    fail "apt-get download failed: $(grep -E '^E:' "$log" | tail -n 1)"
}

if ((newest == 2)); then
  # The newest PyTorch's torch.cuda._memory_viz (pure Python, the standard library only): the
  # snapshot export's second reader (tests/realtorch/snapshot/torch_snapshot_check.py).
  out=$cache/newest-memory-viz
  if [[ ! -f $out/_memory_viz.py ]]; then
    apt_for sid
    download "$cache/debs-sid" python3-torch
    rm -rf "$out" && mkdir -p "$out"
    deb=$(ls "$cache/debs-sid"/python3-torch_*.deb | head -n 1)
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$out" --wildcards --no-anchored '*/torch/cuda/_memory_viz.py'
    found=$(find "$out" -name _memory_viz.py | head -n 1)
    [[ -n $found ]] || fail "python3-torch has no torch/cuda/_memory_viz.py"
    mv "$found" "$out/_memory_viz.py"
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >"$out/version.txt"
  fi
  echo "$out/_memory_viz.py"
  exit 0
fi
if ((newest)); then
  out=$cache/newest
  if [[ ! -f $out/.done ]]; then
    apt_for sid
    download "$cache/debs-sid" libtorch2.14
    rm -rf "$out" && mkdir -p "$out"
    deb=$(ls "$cache/debs-sid"/libtorch2.14_*.deb | head -n 1)
    # Only the three libraries the check reads (libtorch_cpu alone is 300 MB unpacked).
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$out" --wildcards --no-anchored \
      'libc10.so.*' 'libtorch_cpu.so.*' 'libtorch_python.so.*'
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >"$out/version.txt"
    touch "$out/.done"
  fi
  find "$out" -name 'libc10.so.*' -type f -printf '%h\n' | head -n 1
  exit 0
fi

root=$cache/root
launcher=$cache/python3.13
# Chosen by hand from python3-torch-cuda's dependency closure (apt's own is 254 packages, 2.5 GB:
# nvidia-cuda-dev, NPP, ROCm, perl...): what the interpreter, `import torch` and the libraries'
# DT_NEEDED closure need. closure.py proves the list complete after every change (setup.sh).
python_pkgs=(libc6 libgcc-s1 libstdc++6 libexpat1 zlib1g libzstd1 liblzma5 libbz2-1.0 libssl3t64
  libffi8 libmpdec4 libuuid1 libsqlite3-0 libtinfo6 libncursesw6 libreadline8t64
  python3.13-minimal libpython3.13-minimal libpython3.13-stdlib)
pydeps=(python3-numpy libblas3 liblapack3 libgfortran5 python3-typing-extensions python3-filelock
  python3-fsspec python3-jinja2 python3-markupsafe python3-networkx python3-sympy python3-mpmath
  python3-packaging python3-yaml libyaml-0-2 python3-psutil
  python3-pytest python3-pluggy python3-iniconfig)  # (pytest: the plugin's test under real PyTorch)
torch_pkgs=(python3-torch-cuda libtorch-cuda-2.6 libnuma1 libcpuinfo0 libfmt10 libcpp-httplib0.18
  libbrotli1 libprotobuf32t64 libxnnpack0.20241108 libvulkan1 libtensorpipe-cuda-0 libuv1t64
  libgloo-cuda-0 libonnx1t64 libdnnl3.6 libsleef3 libz3-4 libpthreadpool0 libgomp1
  libibverbs1 libnl-3-200 libnl-route-3-200 libhiredis1.1.0
  libopenmpi40 libevent-core-2.1-7t64 libevent-pthreads-2.1-7t64 libfabric1 libhwloc15 libpmix2t64
  libpsm2-2 libucx0 librdmacm1t64 libmunge2 libudev1 libxml2 libicu76 libcap2 libfuse3-4 ibverbs-providers)
# NVIDIA's CUDA 12.4 libraries (non-free): only in real mode; stubgen.py's stubs stand in otherwise.
# libcudart12 and libcuda1 are never fetched: the stand-in runtime and the simulated driver replace them.
cuda_pkgs=(libcublas12 libcublaslt12 libcufft11 libcurand10 libcusolver11 libcusparse12 libnvjitlink12
  libnccl2 libnvrtc12 libnvtoolsext1)
pkgs=("${python_pkgs[@]}" "${pydeps[@]}" "${torch_pkgs[@]}")
[[ $mode == real ]] && pkgs+=("${cuda_pkgs[@]}")
# The stamp names the package list: a changed list fetches and unpacks what is new.
done_stamp=$root/.done-$mode-$(printf '%s\n' "${pkgs[@]}" | md5sum | cut -c1-12)
if [[ -f $done_stamp && -x $launcher ]]; then echo "$launcher"; exit 0; fi
t0=$(date +%s%N)
apt_for trixie
download "$cache/debs" "${pkgs[@]}"
t1=$(date +%s%N)
say "download: $(( (t1 - t0) / 1000000 )) ms, $(du -cm "$cache/debs"/*.deb | tail -n 1 | cut -f1) MB of .debs"

# Unpack each .deb once (a stamp per file): a changed list unpacks only what is new.
mkdir -p "$root/.unpacked"
: >"$cache/versions.new"
for p in "${pkgs[@]}"; do
  d=$(ls "$cache/debs/${p}_"*.deb | head -n 1)
  [[ -f $root/.unpacked/$(basename "$d") ]] || { dpkg-deb -x "$d" "$root" && touch "$root/.unpacked/$(basename "$d")"; }
  dpkg-deb -f "$d" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >>"$cache/versions.new"
done
sort -o "$cache/versions.txt" "$cache/versions.new" && rm -f "$cache/versions.new"
lib=$root/usr/lib/x86_64-linux-gnu
# What update-alternatives would have made.
ln -sfn blas/libblas.so.3 "$lib/libblas.so.3"
ln -sfn lapack/liblapack.so.3 "$lib/liblapack.so.3"
t2=$(date +%s%N)
say "unpack: $(( (t2 - t1) / 1000000 )) ms, root $(du -sm "$root" | cut -f1) MB"

# The interpreter started with trixie's own ld.so and C library (this machine's may be older).
# LD_LIBRARY_PATH comes first (the stand-ins, the simulated driver); LD_PRELOAD works as usual.
# Gloo installs into usr/lib, not the multiarch folder. The machine's folders come last
# (libvramtrace.so's libunwind is found there); closure.py checks that nothing of the root needs them.
cat >"$launcher" <<LAUNCH
#!/bin/sh
# python3.13 from Debian trixie with its CUDA build of PyTorch, unpacked under $root (tests/realtorch/fetch.sh).
PYTHONHOME=$root/usr exec $lib/ld-linux-x86-64.so.2 --library-path "\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH:}$lib:$root/usr/lib:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" $root/usr/bin/python3.13 "\$@"
LAUNCH
chmod +x "$launcher"
"$launcher" -c pass 2>>"$log" || fail "python3.13 was unpacked but does not start (see $log)"
rm -f "$root"/.done-"$mode"*; touch "$done_stamp"
echo "$launcher"
