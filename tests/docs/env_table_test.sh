#!/usr/bin/env bash
# Every VRAMTRACE_* variable that the product's code names in a string (an error message, a
# getenv) is a row of README.md's configuration table, and every row names a real variable.
# Usage: tests/docs/env_table_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?source dir}
cd "$src"
dirs=()
for d in interpose cupti tools analyzer common format doctor pytest_plugin python include; do
  [ -d "$d" ] && dirs+=("$d")
done
named=$(grep -rhoE --include='*.cpp' --include='*.h' --include='*.c' --include='*.py' '"[^"]*VRAMTRACE_[A-Z0-9_]+' "${dirs[@]}" |
        grep -oE 'VRAMTRACE_[A-Z0-9_]+' | sort -u)
table=$(grep -E '^\| `VRAMTRACE_' README.md | cut -d'|' -f2 | grep -oE 'VRAMTRACE_[A-Z0-9_]+' | sort -u)
[ -n "$named" ] || { echo "FAIL: found no VRAMTRACE_ names in ${dirs[*]}"; exit 1; }
missing=$(comm -23 <(echo "$named") <(echo "$table"))
stale=$(comm -13 <(echo "$named") <(echo "$table"))
status=0
[ -z "$missing" ] || { echo "FAIL: named in the code but not in README.md's table: $missing"; status=1; }
[ -z "$stale" ] || { echo "FAIL: in README.md's table but named nowhere in the code: $stale"; status=1; }
[ $status -ne 0 ] || echo "ok: $(echo "$named" | wc -l) variables, all in the table"
exit $status
