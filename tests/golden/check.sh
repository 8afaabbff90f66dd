#!/usr/bin/env bash
# One golden test (tests/golden/README.md): today's CLI on a checked-in trace must print exactly
# what NAME.dump.jsonl, NAME.report.json, NAME.report.txt and NAME.status (exit statuses and
# stderr) hold. Nothing is regenerated here; regenerate.sh passes --update to rewrite them.
# Usage: check.sh CLI GOLDEN.trace.gz [--update] [--reports-only]
#   --reports-only: only the report's JSON and text (and statuses): for the large generated traces
#   of tests/golden/shapes/, whose dump would be tens of MB.
# The outputs must not depend on this machine or checkout: the trace is unpacked into a temporary
# folder and named relative to it, the CLI runs in an empty environment with the C locale, and
# symbolization looks in a sysroot that does not exist (frames keep module+offset; the module
# paths are the ones recorded in the trace).
set -uo pipefail
# VRAMTRACE_TEST_CLI (tests/sanitizers.sh) replaces CLI, as in the e2e tests.
cli=$(realpath "${VRAMTRACE_TEST_CLI:-${1:?usage: check.sh CLI GOLDEN.trace.gz [--update]}}")
gz=$(realpath "${2:?usage: check.sh CLI GOLDEN.trace.gz [--update]}")
update=
reports_only=
for a in "${@:3}"; do
  case $a in
    --update) update=--update ;;
    --reports-only) reports_only=1 ;;
    *) echo "check.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
dir=$(dirname "$gz")
name=$(basename "$gz" .trace.gz)
sysroot=/nonexistent/vramtrace-golden-sysroot
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/run"
gzip -dc "$gz" >"$tmp/run/$name.trace" || { echo "golden $name: cannot unpack $gz"; exit 1; }
chmod 600 "$tmp/run/$name.trace"

# run LABEL ARGS...: stdout to $tmp/LABEL, the exit status and stderr (prefixed) to $tmp/status.
run() {
  local label=$1
  shift
  (cd "$tmp/run" && env -i PATH=/usr/bin:/bin LC_ALL=C ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
    "$cli" "$@" >"$tmp/$label" 2>"$tmp/$label.err")
  echo "$label: exit $?" >>"$tmp/status"
  sed "s/^/$label: /" "$tmp/$label.err" >>"$tmp/status"
}
[ -n "$reports_only" ] || run dump dump --meta --sysroot "$sysroot" "$name.trace"
run json report --format json --sysroot "$sysroot" "$name.trace"
run text report --format text --sysroot "$sysroot" "$name.trace"

outputs=("json:$name.report.json" "text:$name.report.txt" "status:$name.status")
[ -n "$reports_only" ] || outputs=("dump:$name.dump.jsonl" "${outputs[@]}")
if [ "$update" = --update ]; then
  for o in "${outputs[@]}"; do cp "$tmp/${o%%:*}" "$dir/${o#*:}"; done
  exit 0
fi
fail=0
for o in "${outputs[@]}"; do
  expected=$dir/${o#*:}
  if [ ! -f "$expected" ]; then
    echo "golden $name: $expected is missing (tests/golden/regenerate.sh writes it)"
    fail=1
  elif ! cmp -s "$tmp/${o%%:*}" "$expected"; then
    echo "golden $name: the output differs from $(basename "$expected") (first 60 lines of the diff):"
    diff -u "$expected" "$tmp/${o%%:*}" | head -60
    fail=1
  fi
done
what="dump --meta, report json and text, statuses"
[ -z "$reports_only" ] || what="report json and text, statuses"
[ "$fail" = 0 ] && echo "golden $name: $what: identical"
exit "$fail"
