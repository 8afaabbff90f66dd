#!/usr/bin/env bash
# Another Debian release's C library (libc6 and libgcc-s1), unpacked into a cache folder: nothing
# is installed and the machine's apt configuration is not changed. Prints the folder of its
# libraries and loader; a binary runs on that C library with the release's own loader:
#   "$dir/ld-linux-x86-64.so.2" --library-path "$dir" BINARY
# (tests/packaging/wheel_test.sh). As ../shared/tools/debian-python.sh does for Python.
# Exit 3 with one line when the suite cannot be had (callers skip, saying so).
# Usage: debian_libc.sh SUITE   (bullseye: glibc 2.31, bookworm: 2.36, trixie: 2.41)
set -euo pipefail
suite=${1:?usage: debian_libc.sh SUITE}
[[ $suite =~ ^[a-z]+$ ]] || { echo "debian_libc: '$suite' is not a suite name" >&2; exit 2; }
cache=${VT_LIBC_CACHE:-$HOME/.cache/vramtrace-libc}
root=$cache/$suite
arch=$(dpkg --print-architecture)
multiarch=$(uname -m)-linux-gnu
libdir=$root/lib/$multiarch
if ls "$libdir"/ld-linux-*.so.* >/dev/null 2>&1; then echo "$libdir"; exit 0; fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/apt.XXXX"); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
uri=$(grep -hoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
  awk '{print $2}' | grep -v -- '-security' | head -n 1 || true)
[[ -n $uri ]] || { echo "debian_libc: no Debian mirror configured on this machine" >&2; exit 3; }
key=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$key] $uri $suite main" >"$work/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o APT::Architecture="$arch"
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq >"$work/update.log" 2>&1 ||
  { echo "debian_libc: Debian $suite cannot be reached ($(tail -n 1 "$work/update.log"))" >&2; exit 3; }
(cd "$work/debs" && apt-get "${apt_opts[@]}" download -qq "libc6/$suite" "libgcc-s1/$suite" >/dev/null 2>&1) ||
  { echo "debian_libc: no libc6 in Debian $suite" >&2; exit 3; }
rm -rf "$root.part"; mkdir -p "$root.part"
for d in "$work/debs"/*.deb; do dpkg-deb -x "$d" "$root.part"; done
# merged-/usr suites keep the libraries under usr/lib: one folder for --library-path either way
[[ -d $root.part/lib/$multiarch ]] || { mkdir -p "$root.part/lib"; ln -s ../usr/lib/$multiarch "$root.part/lib/$multiarch"; }
rm -rf "$root"; mv "$root.part" "$root"
ls "$libdir"/ld-linux-*.so.* >/dev/null 2>&1 || { echo "debian_libc: Debian $suite's libc6 has no loader in lib/$multiarch" >&2; exit 3; }
echo "$libdir"
