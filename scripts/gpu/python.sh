#!/usr/bin/env bash
# flashcore's wheel on the GPU machine, as a user gets it: installs
# dist/flashcore-*.whl (built here by scripts/python/wheel.sh; carry "dist")
# into a directory on PYTHONPATH beside the machine's torch, with no compiler and no index, then
# runs scripts/gpu/python_check.py (against torch on the device) and, with
# --bench, bench/python/bench.py (FlashAttention-4 too where
# ../shared/tools/fa4-install.sh unpacked it into /tmp/fa4-site).
# Usage (GPU machine, repository root):
#   [FLASHCORE_CHECKS=REGEX] scripts/gpu/python.sh [--bench [bench.py's options]]
# (FLASHCORE_CHECKS: only the checks whose names match;
# FLASHCORE_CHECK_REPEAT=N: each N times, to catch what fails now and then.)
# Logs go to $OUT; exit 0 when every check passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
# Into a directory of its own on PYTHONPATH, beside the machine's torch
# (wherever that python finds it).
site=$(install_wheel) || { echo "python.sh: no wheel installed" >&2; exit 2; }
export PYTHONPATH=$site
[ -d /tmp/fa4-site ] &&
  PYTHONPATH=$PYTHONPATH:/tmp/fa4-site:/tmp/fa4-site/nvidia_cutlass_dsl/dsl_packages
# Outside the repository, so that `import flashcore` is the installed one.
cd /tmp
python3 "$root/scripts/gpu/python_check.py" > "$out/python_check.log" 2>&1
status=$?
if [ "${1:-}" = --bench ]; then
  shift
  python3 "$root/bench/python/bench.py" "$@" > "$out/bench.log" 2>&1 ||
    { echo "python.sh: bench.py failed (see bench.log)"; status=1; }
  sed -n '/^# flashcore/,$p' "$out/bench.log"
fi
sed -n '/^| check |/,$p' "$out/python_check.log"
exit $status
