#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried (see
# scripts/gpu/pack.sh): the JIT end to end (cold, then from the disk cache in
# a fresh process, then sm_80 PTX on this GPU), compute-sanitizer memcheck,
# the C API tests (which launch when a GPU is present), and jit-bench.
# Logs go to $OUT (or /tmp/flashcore-gpu); a summary table is printed last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
bin=/tmp/flashcore-bin
mkdir -p "$out" "$bin"
for packed in "$root"/.gpu/*.xz; do
  xz -dc "$packed" > "$bin/$(basename "$packed" .xz)"
  chmod +x "$bin/$(basename "$packed" .xz)"
done
export PATH=/usr/local/cuda/bin:$PATH
kernel=$root/examples/jit-scale/scale.mlir
cache=$(mktemp -d)
rows=()
check() { # name, log, command...
  local name=$1 log=$out/$2; shift 2
  if "$@" > "$log" 2>&1; then rows+=("$(printf '%-34s PASS' "$name")")
  else rows+=("$(printf '%-34s FAIL (see %s)' "$name" "$(basename "$log")")"); fi
}

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$out/device.txt" 2>&1
check "jit-scale cold (compile+run)" jit-scale-cold.log env FMHA_CACHE_DIR="$cache" "$bin/jit-scale" "$kernel"
grep -q "kernel: compiled" "$out/jit-scale-cold.log" || rows+=("jit-scale cold                     FAIL (did not compile)")
check "jit-scale warm (disk cache)" jit-scale-warm.log env FMHA_CACHE_DIR="$cache" "$bin/jit-scale" "$kernel"
grep -q "kernel: disk cache" "$out/jit-scale-warm.log" || rows+=("jit-scale warm                     FAIL (no disk hit)")
check "jit-scale sm_80 PTX on this GPU" jit-scale-sm80.log env FMHA_CACHE_DIR=off "$bin/jit-scale" "$kernel" sm_80
check "jit-scale via the driver's PTX JIT" jit-scale-driver-jit.log env FMHA_CACHE_DIR=off FMHA_NVJITLINK=off "$bin/jit-scale" "$kernel"
grep -q "using the driver's own PTX JIT" "$out/jit-scale-driver-jit.log" || rows+=("driver PTX JIT                     FAIL (other path taken)")
if command -v compute-sanitizer >/dev/null; then
  check "compute-sanitizer memcheck" memcheck.log \
    compute-sanitizer --tool memcheck --error-exitcode 3 env FMHA_CACHE_DIR=off "$bin/jit-scale" "$kernel"
fi
check "C API on the GPU (gtest)" capi.log "$bin/FmhaCAPITests"
grep -q "\[  SKIPPED \]" "$out/capi.log" && rows+=("C API on the GPU                   FAIL (skipped)")
check "jit-bench" jit-bench.log "$bin/jit-bench" "$kernel"

echo "== device: $(cat "$out/device.txt")"
for log in jit-scale-cold jit-scale-sm80 jit-scale-driver-jit; do grep -E "^(plan|checked)" "$out/$log.log" | sed "s/^/== $log: /"; done
sed -n '/^$/,$p' "$out/jit-bench.log"
echo
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q FAIL
