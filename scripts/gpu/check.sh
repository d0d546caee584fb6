#!/usr/bin/env bash
# The whole GPU check, in one call on the GPU machine, from the repository
# root, with .gpu/ carried (scripts/gpu/pack.sh builds it here):
#   1. builds the harness and the reference kernels there (nvcc, CMake);
#   2. checks the references against a double-precision CPU implementation;
#   3. proves the harness rejects deliberately broken kernels;
#   4. runs compute-sanitizer memcheck and racecheck on the kernels;
#   5. times a 16k-token reference attention and measures the ceilings;
#   6. runs the JIT end to end (cold, disk cache, sm_80 PTX, driver JIT, C API),
#      the generated resample kernels (scripts/gpu/resample.sh) and the
#      attention matrix (scripts/gpu/attention.sh) against kernels-ref.
# Full logs go to $OUT (or /tmp/flashcore-gpu); the summary table is last.
# Exit status 0 when every row passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
rows=()
logs=$(mktemp -d)
row() { rows+=("$(printf '%-52s %s' "$1" "$2")"); }
# check NAME EXPECTED_STATUS COMMAND...: runs COMMAND, logging to a file.
count=0
check() {
  local name=$1 expected=$2; shift 2
  count=$((count + 1))
  local log=$logs/$(printf '%03d' "$count").log
  { echo "\$ $*"; "$@"; } > "$log" 2>&1
  local status=$?
  if [ "$status" -eq "$expected" ]; then row "$name" PASS
  else row "$name" "FAIL (exit $status, see $(basename "$log") in checks.log)"; fi
}

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$out/device.txt" 2>&1

# 1. Build the MLIR-free parts here.
build=/tmp/flashcore-harness
if cmake -S "$root/harness" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
   ninja -C "$build" >> "$out/build.log" 2>&1; then
  row "build harness + kernels-ref (nvcc)" PASS
else
  row "build harness + kernels-ref (nvcc)" "FAIL (see build.log)"
  printf '%s\n' "${rows[@]}"; exit 1
fi
runner=$build/bin/fmha-runner

# 2. References against the CPU, on fresh random inputs (seeds in the logs).
a="$runner attention --oracle=cpu"
check "ref attention vs cpu: 1x1, bf16 d64"            0 $a --seq-q=1 --seq-k=1 --head-dim=64
check "ref attention vs cpu: 17x113 GQA 4:2 causal lse" 0 $a --batch=2 --heads=4 --kv-heads=2 --seq-q=17 --seq-k=113 --causal --lse
check "ref attention vs cpu: 113x17 causal lse (empty rows)" 0 $a --heads=2 --seq-q=113 --seq-k=17 --causal --lse --head-dim=128
check "ref attention vs cpu: 1000 causal bshd f16 d128" 0 $a --heads=2 --seq-q=1000 --causal --layout=bshd --dtype=f16 --head-dim=128 --lse
check "ref attention vs cpu: GQA 8:1 d256 f16"          0 $a --heads=16 --kv-heads=2 --seq-q=33 --seq-k=257 --head-dim=256 --dtype=f16
check "ref attention vs cpu: MQA window 32,0 causal"    0 $a --heads=8 --kv-heads=1 --seq-q=200 --seq-k=300 --causal --window=32,0 --lse
check "ref attention vs cpu: window 16,16 non-causal"   0 $a --heads=2 --seq-q=150 --seq-k=150 --window=16,16 --head-dim=128
check "ref attention vs cpu: 4097 non-causal d64"       0 $a --heads=1 --seq-q=4097 --seq-k=4097
r="$runner resample --oracle=cpu"
for mode in linear nearest previous; do
  for dtype in f32 f16 bf16; do
    check "ref resample vs cpu: $mode $dtype 2 streams lengths" 0 $r --mode=$mode --dtype=$dtype --batch=8 --samples=100,37 --features=32,5 --targets=61 --lengths
  done
done
check "ref resample vs cpu: S=1, T=1"                   0 $r --samples=1 --features=8 --targets=1
check "ref resample vs cpu: 4 streams, D=1,3,8,64"      0 $r --samples=7,300,1,64 --features=1,3,8,64 --targets=500 --lengths

# 3. The harness catches broken kernels (exit status 1 expected).
check "harness rejects a causal mask off by one"       1 $runner attention --causal --seq-q=100 --seq-k=140 --candidate=broken-mask
check "harness rejects an unwritten last query row"    1 $runner attention --seq-q=77 --candidate=broken-tail
check "harness rejects an unwritten last target"       1 $runner resample --samples=50 --targets=33 --candidate=broken-tail

# 4. compute-sanitizer (memcheck, racecheck, synccheck) on the kernels.
if command -v compute-sanitizer > /dev/null; then
  check "compute-sanitizer: attention" 0 "$root/scripts/gpu/sanitize.sh" $runner attention --seq-q=70 --seq-k=90 --causal --lse --heads=2 --kv-heads=1 --seed=1
  check "compute-sanitizer: resample"  0 "$root/scripts/gpu/sanitize.sh" $runner resample --samples=40,9 --features=8,3 --targets=20 --lengths --seed=1
else
  row "compute-sanitizer" "FAIL (not installed)"
fi

# 5. Usable at scale, and the ceilings.
check "ref attention 1x16x16384x128 causal, timed"     0 $runner attention --heads=16 --seq-q=16384 --head-dim=128 --causal --no-check --time
check "ceilings (copy, bf16 GEMM)"                     0 $runner ceilings

# 6. The JIT, from the binaries carried in .gpu/. With the PTX compiler
# linked in they no longer fit the device tool's 64 MiB carry together:
# carry some per call; the rows of a program not carried say SKIP.
bin=/tmp/flashcore-bin
if ls "$root"/.gpu/*.xz > /dev/null 2>&1; then
  mkdir -p "$bin"
  for packed in "$root"/.gpu/*.xz; do
    xz -dc "$packed" > "$bin/$(basename "$packed" .xz)" && chmod +x "$bin/$(basename "$packed" .xz)"
  done
  # carried NAME: whether NAME came in .gpu/; a SKIP row for each of its
  # checks when not.
  carried() {
    [ -f "$root/.gpu/$1.xz" ] && return 0
    row "$1 checks" "SKIP (.gpu/$1.xz not carried)"
    return 1
  }
  last_log() { echo "$logs/$(printf '%03d' "$count").log"; }
  kernel=$root/examples/jit-scale/scale.mlir
  cache=$(mktemp -d)
  if carried jit-scale; then
    check "jit-scale cold (compile + run)"               0 env FMHA_CACHE_DIR="$cache" "$bin/jit-scale" "$kernel"
    check "jit-scale warm (disk cache)"                  0 env FMHA_CACHE_DIR="$cache" "$bin/jit-scale" "$kernel"
    grep -q "kernel: disk cache" "$(last_log)" || row "jit-scale warm came from the disk cache" FAIL
    check "jit-scale: sm_80 PTX for this GPU, as a cubin" 0 env FMHA_CACHE_DIR=off "$bin/jit-scale" "$kernel" sm_80
    grep -q "the PTX compiler (CUDA .*) compiles the sm_80 PTX for .* as a whole program" "$(last_log)" || row "PTX compiler cubin path taken" FAIL
    check "jit-scale: sm_80 through the driver's JIT"    0 env FMHA_CACHE_DIR=off FMHA_PTX_COMPILER=off "$bin/jit-scale" "$kernel" sm_80
    grep -q "the driver (CUDA .*) compiles the sm_80 PTX for .* as a whole program" "$(last_log)" || row "driver PTX JIT path taken" FAIL
    check "jit-scale: sm_80 through nvJitLink (fallback)" 0 env FMHA_CACHE_DIR=off FMHA_DRIVER_JIT=off "$bin/jit-scale" "$kernel" sm_80
    grep -q "nvJitLink .* links it for" "$(last_log)" || row "nvJitLink path taken" FAIL
    check "jit-scale: with nvJitLink off"                0 env FMHA_CACHE_DIR=off FMHA_NVJITLINK=off "$bin/jit-scale" "$kernel"
    check "compute-sanitizer memcheck: jit-scale"        0 compute-sanitizer --tool memcheck --error-exitcode 9 env FMHA_CACHE_DIR=off "$bin/jit-scale" "$kernel"
  fi
  if carried FmhaCAPITests; then
    check "C API on the GPU (gtest)"                      0 "$bin/FmhaCAPITests"
    grep -q "SKIPPED" "$(last_log)" && row "C API GPU test ran (not skipped)" FAIL
  fi
  # The driver's own cache of compiled PTX off: the cold attention rows.
  if carried jit-bench; then
    check "jit-bench"                                     0 env CUDA_CACHE_DISABLE=1 "$bin/jit-bench" "$kernel"
  fi
  if carried fmha-runner-jit; then
    # The generated resample kernels: their own matrix, the checking mode
    # of unsorted times and the timed rows (scripts/gpu/resample.sh).
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    check "jit resample matrix + check-sorted + sanitizers" 0 "$root/scripts/gpu/resample.sh" "$bin/fmha-runner-jit"
    # The generated attention kernel: its own matrix (scripts/gpu/attention.sh).
    check "jit attention matrix vs kernels-ref + sanitizers" 0 "$root/scripts/gpu/attention.sh" "$bin/fmha-runner-jit"
  fi
  if carried fmha-doctor; then
    check "fmha-doctor: the JIT can work here"           0 "$bin/fmha-doctor"
    check "fmha-doctor: nvJitLink 'off' still works"     0 env FMHA_NVJITLINK=off "$bin/fmha-doctor"
    check "fmha-doctor: no driver is a failure"          1 env FMHA_LIBCUDA=/nonexistent "$bin/fmha-doctor"
  fi
else
  row "JIT checks" "FAIL (.gpu/ not carried: run scripts/gpu/pack.sh)"
fi

cat "$logs"/*.log > "$out/checks.log"
echo "== device: $(cat "$out/device.txt")"
grep -h -E "^(time:|gpu time:|ceiling|plan:|launch|disk-cache|cold compile|attention (MLIR|cold|disk))" "$logs"/*.log | sed 's/^/== /'
echo
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q FAIL
