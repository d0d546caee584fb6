#!/usr/bin/env bash
# Temporary: the backward's checks in one call.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
log=$out/check.log
: > "$log"
tests=$(unpack_runner FmhaCAPITests) || exit 2
check "FmhaCAPITests backward" timeout 200 "$tests" --gtest_filter='CAPI.Backward*'
for tool in memcheck racecheck synccheck; do
  check "compute-sanitizer $tool: backward d64" \
    timeout 200 compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$tests" --gtest_filter='CAPI.BackwardOnAGpu*'
done
check "python_check backward" env FLASHCORE_CHECKS='backward' "$root/scripts/gpu/python.sh"
grep -E "FAIL" "$out/python_check.log" | head -20
finish
