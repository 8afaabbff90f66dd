#!/usr/bin/env bash
# Rewrites the expected outputs of the golden traces with today's CLI (tests/golden/README.md says
# when that is allowed). The traces themselves are never touched.
# Usage: tests/golden/regenerate.sh BUILD_DIR [VERSION_DIR...]   (default: every tests/golden/v*/)
set -euo pipefail
build=$(realpath "${1:?usage: regenerate.sh BUILD_DIR [VERSION_DIR...]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=("$here"/v*/)
for d in "${dirs[@]}"; do
  for gz in "$d"/*.trace.gz; do
    "$here/check.sh" "$build/bin/vramtrace" "$gz" --update
    echo "rewrote the expected outputs of $(basename "$d")/$(basename "$gz" .trace.gz)"
  done
done
echo "review them with git diff before committing: every change must be one you meant"
