#!/usr/bin/env bash
# The shipped binaries depend on glibc alone (and libgcc_s.so.1, which glibc itself loads for
# thread cancellation), except libvramtrace.so's libunwind.so.8 and liblzma.so.5, which must
# then sit beside it (the wheel carries them; RUNPATH $ORIGIN finds them); and no symbol needs a
# glibc newer than 2.34, the oldest supported (README). Usage: ldd_check.sh CLI LIBRARY
set -uo pipefail
cli=${1:?usage: ldd_check.sh CLI LIBRARY}
lib=${2:?usage: ldd_check.sh CLI LIBRARY}
fail() { echo "FAIL: $*"; exit 1; }
glibc='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1)$'
for f in "$cli" "$lib"; do
  [ -f "$f" ] || fail "$f is missing"
  deps=$(ldd "$f" | awk '{print $1}')
  [ -n "$deps" ] || fail "ldd $f printed nothing"
  for d in $deps; do
    if [ "$f" = "$lib" ] && [[ $d == libunwind.so.8 || $d == liblzma.so.5 ]]; then
      where=$(ldd "$f" | awk -v d="$d" '$1 == d {print $3}')
      [ "$(dirname "$(realpath "$where")")" = "$(dirname "$(realpath "$f")")" ] ||
        fail "$f loads $d from $where, not from beside it (the copy it ships)"
      continue
    fi
    [[ $d =~ $glibc ]] || fail "$f depends on $d (only glibc is allowed): $(ldd "$f" | tr '\n' ' ')"
  done
  newest=$(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
  [ -n "$newest" ] || fail "no glibc symbol versions in $f"
  [ "$(printf '%s\nGLIBC_2.34\n' "$newest" | sort -V | tail -1)" = "GLIBC_2.34" ] ||
    fail "$f needs $newest (2.34 is the oldest supported): $(objdump -T "$f" | grep "$newest" | awk '{print $NF}' | tr '\n' ' ')"
  echo "ok $f: $(echo $deps | tr '\n' ' '); newest glibc symbol $newest"
done
