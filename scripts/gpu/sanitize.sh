#!/usr/bin/env bash
# compute-sanitizer on any kernel the runner can launch: memcheck, racecheck
# and synccheck over one small problem. Usage (on the GPU machine):
#   scripts/gpu/sanitize.sh RUNNER attention --seq-q=70 --causal --candidate=ref
# Exit status 0 when every tool reports no error.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 FMHA-RUNNER attention|resample [options]" >&2; exit 2; }
status=0
for tool in memcheck racecheck synccheck; do
  if compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" > "/tmp/sanitize-$tool.log" 2>&1; then
    printf '%-10s clean\n' "$tool"
  else
    printf '%-10s ERRORS (see /tmp/sanitize-%s.log)\n' "$tool" "$tool"
    status=1
  fi
done
exit $status
