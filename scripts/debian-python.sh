#!/usr/bin/env bash
# Newer CPython interpreters than this Debian release ships (3.14, 3.15, ...), taken from Debian's
# newer suites and unpacked into a cache folder: nothing is installed on the machine and the
# machine's apt configuration is not changed. Prints the path of a launcher that runs the
# interpreter like `python3.X` (it starts it with the unpacked suite's own C library).
#
#   launcher=$(scripts/debian-python.sh 3.14) && "$launcher" -c 'import sys; print(sys.version)'
#
# (The team's tool, kept here so a fresh CI checkout has it; tests/python/pythons.sh calls it under
# a lock, since ctest runs two Python suites at once and both may unpack the same version.)
#
# Exit 0 and the launcher's path on stdout; exit 3 with one line on stderr when the packages cannot
# be had (the suite is unreachable, or has no such version): callers skip and say so.
# Cache: $VT_PYTHON_CACHE (default ~/.cache/vramtrace-python). Suites tried: sid, then trixie.
set -euo pipefail
ver=${1:?usage: debian-python.sh 3.14}
[[ $ver =~ ^3\.[0-9]+$ ]] || { echo "debian-python: '$ver' is not a version like 3.14" >&2; exit 2; }
cache=${VT_PYTHON_CACHE:-$HOME/.cache/vramtrace-python}
root=$cache/$ver/root
launcher=$cache/$ver/python$ver
if [[ -x $launcher ]] && "$launcher" -c pass 2>/dev/null; then echo "$launcher"; exit 0; fi
mkdir -p "$cache/$ver"
work=$(mktemp -d "$cache/$ver/apt.XXXX"); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
# The machine's own Debian mirror, with a newer suite: derived from its configuration, never named here.
uri=$(grep -hoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  awk '{print $2}' | grep -v -- '-security' | head -n 1 || true)
[[ $uri == \[* ]] && uri=$(grep -hoE '^deb \[[^]]*\] +[^ ]+' /etc/apt/sources.list 2>/dev/null | awk '{print $NF}' | head -n 1)
[[ -n $uri ]] || { echo "debian-python: no Debian mirror configured on this machine" >&2; exit 3; }
key=/usr/share/keyrings/debian-archive-keyring.gpg
for suite in sid trixie; do echo "deb [signed-by=$key] $uri $suite main"; done >"$work/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
if ! apt-get "${apt_opts[@]}" update -qq >"$work/update.log" 2>&1; then
  echo "debian-python: the newer Debian suites cannot be reached ($(tail -n 1 "$work/update.log"))" >&2; exit 3
fi
pkgs=(python$ver-minimal libpython$ver-minimal libpython$ver-stdlib libpython$ver libpython$ver-dev
  libc6 libexpat1 zlib1g libzstd1 libssl3t64 libffi8 libbz2-1.0 liblzma5 libmpdec4 libuuid1 libsqlite3-0)
(cd "$work/debs" && for p in "${pkgs[@]}"; do apt-get "${apt_opts[@]}" download -qq "$p" >/dev/null 2>&1 || true; done)
ls "$work/debs"/python$ver-minimal_*.deb >/dev/null 2>&1 ||
  { echo "debian-python: no python$ver in Debian's newer suites" >&2; exit 3; }
rm -rf "$root"; mkdir -p "$root"
for d in "$work/debs"/*.deb; do dpkg-deb -x "$d" "$root"; done
lib=$root/usr/lib/x86_64-linux-gnu
cat >"$launcher" <<LAUNCH
#!/bin/sh
# python$ver from Debian's newer suite, unpacked under $root, started with its own C library.
# LD_LIBRARY_PATH still counts (searched first); LD_PRELOAD works as usual.
PYTHONHOME=$root/usr exec $lib/ld-linux-x86-64.so.2 --library-path "\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH:}$lib:$root/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" $root/usr/bin/python$ver "\$@"
LAUNCH
chmod +x "$launcher"
"$launcher" -c pass || { echo "debian-python: python$ver unpacked but does not start" >&2; exit 3; }
echo "$launcher"
