#!/usr/bin/env bash
# The attention backward on the GPU machine, in one call (repository root;
# .gpu/FmhaCAPITests.xz and dist/ carried):
#   1. the C API's GPU tests: fmhaAttentionBackward against gradients
#      computed on the host (and the same bits twice), and the rest of
#      FmhaCAPITests;
#   2. compute-sanitizer memcheck, racecheck and synccheck on the backward
#      test (both chips' kernels);
#   3. scripts/gpu/python.sh with bench.py's arguments (default: the
#      backward rows only): python_check's backward rows against torch's
#      autograd (FLASHCORE_CHECKS, default "backward": all of python_check
#      and FA4's bench no longer fit one call's 600 s), then the benchmark.
# Logs go to $OUT; the table is last; exit 0 when every row passed.
# Usage: scripts/gpu/backward.sh [bench.py options]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
log=$out/backward.log
: > "$log"
tests=$(unpack_runner FmhaCAPITests) || exit 2
# Time limits, so that a kernel that hangs fails its row (exit 124) rather
# than the whole call (a hang once took the call's 600 s).
check "FmhaCAPITests (all, the backward included)" timeout 240 "$tests"
for tool in memcheck racecheck synccheck; do
  check "compute-sanitizer $tool: backward d64, d128, d256 (sm_80, sm_90a)" \
    timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 9 \
    "$tests" --gtest_filter='CAPI.Backward*'
done
[ $# -gt 0 ] || set -- --backward --no-host --no-tflops --rounds 5
check "python.sh --bench $*" env FLASHCORE_CHECKS="${FLASHCORE_CHECKS:-backward}" \
  "$root/scripts/gpu/python.sh" --bench "$@"
sed -n '/^# flashcore/,/^| check |/p' "$out/bench.log" 2>/dev/null | grep -v "^| check |"
finish
