#!/usr/bin/env bash
# ctest's entry for one real-PyTorch workload: run.py, or a skip (77) when the set-up found no
# Debian packages (setup.sh wrote no env.sh and VRAMTRACE_REQUIRE_REAL_TORCH is not 1).
#   tests/realtorch/run_test.sh BUILD NAME
#   tests/realtorch/run_test.sh BUILD --pytest-plugin   (pytest_plugin_check.py)
#   tests/realtorch/run_test.sh BUILD --torch-snapshot  (snapshot/torch_snapshot_check.py)
#   tests/realtorch/run_test.sh BUILD --whatif          (whatif/whatif_check.py)
#   tests/realtorch/run_test.sh BUILD --fit             (fit/fit_check.py)
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -f $1/tests/realtorch/env.sh ]]; then
  if [[ ${VRAMTRACE_REQUIRE_REAL_TORCH:-} == 1 ]]; then
    echo "realtorch: FAILED: no set-up ($1/tests/realtorch/env.sh): its test failed (VRAMTRACE_REQUIRE_REAL_TORCH=1)" >&2
    exit 1
  fi
  echo "realtorch: SKIPPED: no set-up (Debian's PyTorch could not be fetched)" >&2
  exit 77
fi
[[ $2 == --pytest-plugin ]] && exec python3 "$here/pytest_plugin_check.py" "$1"
[[ $2 == --torch-snapshot ]] && exec python3 "$here/snapshot/torch_snapshot_check.py" "$1"
[[ $2 == --whatif ]] && exec python3 "$here/whatif/whatif_check.py" "$1"
[[ $2 == --fit ]] && exec python3 "$here/fit/fit_check.py" "$1"
exec python3 "$here/run.py" "$1" "$2"
