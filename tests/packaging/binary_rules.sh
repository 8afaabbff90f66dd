#!/usr/bin/env bash
# What the wheel (or the GPU stage) ships keeps its promises, checked with binutils alone (not with
# the build backend's own reader, wheel/backend/elf_needs.py):
#   - each file needs (DT_NEEDED) only glibc's libraries and libgcc_s.so.1, or a library beside it
#     in LIB_DIR;
#   - each carried library has a name of its own, libNAME-<8 hex>.so.N, and that name as its soname;
#     none of them is called by its usual soname;
#   - no file needs a glibc symbol version newer than 2.34 (the README's oldest supported glibc), and
#     when TAG is given (manylinux_2_X_x86_64, the wheel's), the newest one needed is exactly 2.X:
#     the tag promises neither more nor less than the binaries need.
# Usage: binary_rules.sh CLI LIB_DIR [TAG]
set -uo pipefail
cli=${1:?usage: binary_rules.sh CLI LIB_DIR [TAG]}
libdir=${2:?usage: binary_rules.sh CLI LIB_DIR [TAG]}
tag=${3:-}
fail() { echo "FAIL: $*"; exit 1; }
system='^(ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1)$'
[ -f "$cli" ] || fail "$cli is missing"
[ -f "$libdir/libvramtrace.so" ] || fail "$libdir has no libvramtrace.so"
newest=GLIBC_2.0
for f in "$cli" "$libdir"/*.so*; do
  name=$(basename "$f")
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for d in $needed; do
    [[ $d =~ $system ]] || [ -f "$libdir/$d" ] || fail "$name needs $d: neither glibc's nor beside it in $libdir"
  done
  if [ "$f" != "$cli" ] && [[ $name != libvramtrace*.so ]]; then
    [[ $name =~ ^lib[a-z0-9_]+-[0-9a-f]{8}\.so\.[0-9]+$ ]] || fail "$name is carried under its usual name (it must have one of its own)"
    soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [ "$soname" = "$name" ] || fail "$name's soname is $soname"
  fi
  mine=$(objdump -T "$f" | grep -o 'GLIBC_2[0-9.]*' | sort -uV | tail -1)
  [ -n "$mine" ] || fail "no glibc symbol versions in $name"
  newest=$(printf '%s\n%s\n' "$newest" "$mine" | sort -V | tail -1)
  echo "ok $name: needs ${needed//$'\n'/ }; newest glibc version $mine"
done
[ "$(printf '%s\nGLIBC_2.34\n' "$newest" | sort -V | tail -1)" = GLIBC_2.34 ] ||
  fail "the binaries need $newest; 2.34 is the oldest glibc supported"
if [ -n "$tag" ]; then
  [[ $tag =~ ^manylinux_2_([0-9]+)_(x86_64|aarch64)$ ]] || fail "$tag is not a manylinux_2_X tag"
  want=${BASH_REMATCH[1]}
  have=${newest#GLIBC_2.}; have=${have%%.*}
  ((have < 17)) && have=17
  [ "$have" = "$want" ] || fail "the tag says glibc 2.$want, the binaries need $newest"
  echo "ok tag $tag: the binaries need $newest"
fi
