# Sourced by the Python suites (run_all.sh, run_e2e.sh) and bench/run_py_bench.sh: finds every
# CPython 3.10-3.15 to test and says which ones are missing and why. Fills
#   pythons=()   interpreters (pyenv's /root/.pyenv/versions/3.1x.*, else python3.1x on PATH; the
#                distribution's /usr/bin/python3.1x too when it is a different build; 3.14/3.15
#                from scripts/debian-python.sh when not installed: a launcher script)
#   skipped=()   "3.1x: reason" for each version not found
#   errors=()    "3.1x: what went wrong" when fetching one failed for another reason than being
#                unavailable (debian-python.sh exit 3): the caller fails on these
# and prints one "tested:" and one "skipped:" line (after the run, call pythons_summary).
pythons=() skipped=() errors=()
_vt_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
_vt_fetch=${VT_DEBIAN_PYTHON:-$_vt_root/scripts/debian-python.sh}
for _m in 10 11 12 13 14 15; do
  _found=""
  for _p in /root/.pyenv/versions/3.$_m.*/bin/python3.$_m; do [ -x "$_p" ] && _found=$_p && break; done
  [ -z "$_found" ] && _found=$(command -v "python3.$_m" 2>/dev/null || true)
  if [ -z "$_found" ] && [ "$_m" -ge 14 ]; then
    _cache=${VT_PYTHON_CACHE:-$HOME/.cache/vramtrace-python}
    mkdir -p "$_cache"
    _err=$(mktemp)
    # Under a lock: two suites run at once under ctest -j2 and would unpack into the same folder.
    _found=$(flock "$_cache/.lock" "$_vt_fetch" "3.$_m" 2>"$_err")
    _rc=$?
    if [ $_rc -eq 3 ]; then
      skipped+=("3.$_m: $(tail -n 1 "$_err")")
      _found=""
    elif [ $_rc -ne 0 ]; then
      errors+=("3.$_m: $_vt_fetch failed (exit $_rc): $(tail -n 1 "$_err")")
      _found=""
    fi
    rm -f "$_err"
    [ -n "$_found" ] || continue
  fi
  if [ -z "$_found" ]; then
    skipped+=("3.$_m: not installed (no pyenv 3.$_m, no python3.$_m on PATH)")
    continue
  fi
  pythons+=("$_found")
  # A system interpreter of the same minor that is a separate build (statically linked on Debian).
  _sys=/usr/bin/python3.$_m
  if [ -x "$_sys" ] && [ "$(readlink -f "$_sys")" != "$(readlink -f "$_found")" ]; then pythons+=("$_sys"); fi
done
unset _m _p _found _sys _cache _err _rc

pythons_summary() {
  local p list=()
  for p in "${pythons[@]}"; do list+=("$("$p" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) ($p)"); done
  echo "tested: ${#pythons[@]} interpreter(s): $(IFS=,; echo "${list[*]}")"
  if [ ${#skipped[@]} -gt 0 ]; then echo "skipped: $(IFS=';'; echo "${skipped[*]}")"; else echo "skipped: none"; fi
  for p in "${errors[@]}"; do echo "ERROR: $p"; done
}
