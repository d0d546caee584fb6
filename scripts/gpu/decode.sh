#!/usr/bin/env bash
# Split-KV decode and the merge of attention states on the GPU machine, in
# one call (repository root; .gpu/FmhaCAPITests.xz and dist/ carried):
#   1. the C API's GPU tests: fmhaMergeAttention against the combine rule
#      computed on the host, split decode against the same call unsplit,
#      and the rest of FmhaCAPITests;
#   2. compute-sanitizer memcheck, racecheck and synccheck on the merge and
#      split decode tests (both chips' kernels);
#   3. scripts/gpu/python.sh with bench.py's arguments (default: the decode
#      rows only): python_check against torch, then the benchmark.
# Logs go to $OUT; the table is last; exit 0 when every row passed.
# Usage: scripts/gpu/decode.sh [bench.py options]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
log=$out/decode.log
: > "$log"
tests=$(unpack_runner FmhaCAPITests) || exit 2
filter='CAPI.MergeOnAGpuMatchesTheHost:CAPI.DecodeSplitsKeysWithAWorkspace'
check "FmhaCAPITests (all, merge and split decode included)" "$tests"
for tool in memcheck racecheck synccheck; do
  check "compute-sanitizer $tool: merge, split decode (sm_80, sm_90a)" \
    compute-sanitizer --tool "$tool" --error-exitcode 9 "$tests" \
    --gtest_filter="$filter"
done
[ $# -gt 0 ] || set -- --decode --no-host --no-tflops --rounds 5
check "python.sh --bench $*" "$root/scripts/gpu/python.sh" --bench "$@"
sed -n '/^# flashcore/,/^| check |/p' "$out/bench.log" 2>/dev/null | grep -v "^| check |"
finish
