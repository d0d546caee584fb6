#!/usr/bin/env bash
# fmha-aot's output on the GPU, in one call on the GPU machine, from the
# repository root with .gpu/ carried (.gpu/aot/sources.tar.xz: made here by
# scripts/gpu/pack-aot.sh, or by scripts/gpu/pack.sh with no arguments):
#   1. builds examples/aot-consumer with g++ and libcuda alone (no nvcc, no
#      MLIR) from the generated flashcore_attn.{h,c}, and runs it;
#   2. builds fmha-runner-aot (the harness and kernels-ref with nvcc, plus
#      the generated fmha_aot.c: sm_80, sm_90 and sm_90a cubins, so the
#      sm_90a kernels on a Hopper GPU) and checks its `aot` candidate
#      against kernels-ref: causal or not, GQA/MQA, odd lengths, BSHD, LSE,
#      a window, head dims 64 to 256, resample; compute-sanitizer on one
#      attention;
#   3. builds the generated backwards (.gpu/aot/grad-sm_90a and grad-sm_90,
#      lowered for chip sm_80; grad-only-sm_90a: what sm_80 refuses, v's
#      head dim apart from q's and dq_order's ordered adds)
#      with scripts/gpu/aot_grad_shim.c into shared objects and checks them
#      against torch's fp32 autograd (scripts/gpu/aot_backward.py), then
#      memcheck on a small case;
#   4. likewise the KV-cache forwards (.gpu/aot/kv-sm_90a and kv-sm_90:
#      sinks, key lengths, paged caches, packed query heads; kv-split-sm_90a:
#      the split decode of packed sequences and its merge) with
#      scripts/gpu/aot_kvcache_shim.c against torch per sequence
#      (scripts/gpu/aot_kvcache.py), then memcheck on a small case;
#   5. prints a short table last.
# Full logs go to $OUT (or /tmp/flashcore-aot): NNN.log per check, build
# logs, checks.log with all of them. Exit status 0 when every row passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-aot}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH=$cuda/bin:$PATH
rows=()
row() { rows+=("$(printf '%-62s %s' "$1" "$2")"); }
finish() {
  cat "$out"/[0-9][0-9][0-9].log > "$out/checks.log" 2> /dev/null
  echo "== device: $(cat "$out/device.txt" 2> /dev/null)"
  grep -h -E "^(device:|loaded:|aot:|checked|attention B=|time:|aot_(backward|kvcache): [0-9]+/[0-9]+ passed)" "$out"/[0-9][0-9][0-9].log 2> /dev/null |
    sort -u | sed 's/^/== /'
  echo
  printf '%s\n' "${rows[@]}"
  ! printf '%s\n' "${rows[@]}" | grep -q FAIL
  exit $?
}
# check NAME EXPECTED_STATUS COMMAND...: runs COMMAND, logging to a file.
count=0
check() {
  local name=$1 expected=$2; shift 2
  count=$((count + 1))
  local log=$out/$(printf '%03d' "$count").log
  { echo "\$ $*"; "$@"; } > "$log" 2>&1
  local status=$?
  if [ "$status" -eq "$expected" ]; then row "$name" PASS
  else row "$name" "FAIL (exit $status, see $(basename "$log"))"; fi
  return 0
}

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader > "$out/device.txt" 2>&1

# The generated sources.
src=/tmp/flashcore-aot-src
rm -rf "$src" && mkdir -p "$src"
if ! tar -C "$src" -xJf "$root/.gpu/aot/sources.tar.xz" > "$out/unpack.log" 2>&1; then
  row "unpack .gpu/aot/sources.tar.xz" "FAIL (run scripts/gpu/pack-aot.sh where MLIR is, carry .gpu)"
  finish
fi
row "unpack .gpu/aot/sources.tar.xz" PASS

# 1. The consumer: a C compiler, a C++ compiler and libcuda, nothing else.
#    libcuda from the toolkit's stubs to link; the driver's runs it.
bin=/tmp/flashcore-aot-bin
rm -rf "$bin" && mkdir -p "$bin"
check "aot-consumer: cc -std=c99 + g++ -lcuda (no nvcc, no MLIR)" 0 bash -c "
  cc -std=c99 -O2 -Wall -Wextra -isystem '$cuda/include' -I '$src/consumer' \
     -c '$src/consumer/flashcore_attn.c' -o '$bin/flashcore_attn.o' &&
  g++ -std=c++11 -O2 -Wall -Wextra -isystem '$cuda/include' -I '$src/consumer' \
     '$root/examples/aot-consumer/main.cpp' '$bin/flashcore_attn.o' \
     -L '$cuda/lib64/stubs' -lcuda -o '$bin/aot-consumer'"
check "aot-consumer: runs, matches its CPU reference" 0 "$bin/aot-consumer"

# 2. fmha-runner-aot: the aot candidate against kernels-ref.
build=/tmp/flashcore-aot-harness
if cmake -S "$root/harness" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DFMHA_AOT_DIR="$src/harness" > "$out/build.log" 2>&1 &&
   ninja -C "$build" fmha-runner-aot >> "$out/build.log" 2>&1; then
  row "build fmha-runner-aot (nvcc harness + generated C)" PASS
else
  row "build fmha-runner-aot (nvcc harness + generated C)" "FAIL (see build.log)"
  finish
fi
runner=$build/bin/fmha-runner-aot
a="$runner attention --candidate=aot"
check "aot attention bf16 d128: 1x1"                            0 $a --head-dim=128 --seq-q=1 --seq-k=1
check "aot attention bf16 d128: GQA 8:2, B=2, 17x113"           0 $a --head-dim=128 --batch=2 --heads=8 --kv-heads=2 --seq-q=17 --seq-k=113
check "aot attention bf16 d128: 1000x1000 bshd"                 0 $a --head-dim=128 --heads=4 --seq-q=1000 --layout=bshd
check "aot attention bf16 d128 causal lse: MQA 4:1, 113x1000"   0 $a --head-dim=128 --causal --lse --heads=4 --kv-heads=1 --seq-q=113 --seq-k=1000
check "aot attention bf16 d128 causal lse: 1000x113 (empty rows)" 0 $a --head-dim=128 --causal --lse --heads=2 --seq-q=1000 --seq-k=113
check "aot attention bf16 d128 causal lse: GQA 8:2, 1000 bshd"  0 $a --head-dim=128 --causal --lse --batch=2 --heads=8 --kv-heads=2 --seq-q=1000 --layout=bshd
check "aot attention bf16 d128 causal lse: 77x77, cpu oracle"   0 $a --head-dim=128 --causal --lse --heads=2 --seq-q=77 --oracle=cpu
check "aot attention f16 d64 causal: B=3, 4097"                 0 $a --dtype=f16 --head-dim=64 --causal --batch=3 --heads=2 --seq-q=4097
check "aot attention f16 d64 causal: 17x1000 bshd"              0 $a --dtype=f16 --head-dim=64 --causal --heads=4 --kv-heads=2 --seq-q=17 --seq-k=1000 --layout=bshd
check "aot attention f16 d128 causal window 32,0 lse: MQA 200x300" 0 $a --dtype=f16 --head-dim=128 --causal --window=32,0 --lse --heads=8 --kv-heads=1 --seq-q=200 --seq-k=300
check "aot attention bf16 d256: GQA 16:2, 33x257 bshd"          0 $a --head-dim=256 --heads=16 --kv-heads=2 --seq-q=33 --seq-k=257 --layout=bshd
check "aot attention: a problem no kernel computes is refused"  2 $a --dtype=f16 --head-dim=128
check "aot resample linear bf16, 2 streams, lengths"            0 $runner resample --candidate=aot --dtype=bf16 --batch=8 --samples=100,37 --features=32,5 --targets=61 --lengths
if command -v compute-sanitizer > /dev/null; then
  check "compute-sanitizer: aot attention causal lse"           0 "$root/scripts/gpu/sanitize.sh" $a --head-dim=128 --causal --lse --heads=2 --kv-heads=1 --seq-q=70 --seq-k=90 --seed=1
else
  row "compute-sanitizer" "FAIL (not installed)"
fi
check "aot attention bf16 d128 causal lse 1x16x4096, timed"     0 $a --head-dim=128 --causal --lse --heads=16 --seq-q=4096 --time --no-check

# check_launchers WHAT DIR NAME SHIM SCRIPT SMALL TIMEOUT [ARCHS]: builds
# the launchers fmha-aot wrote into $src/DIR-<arch>/NAME.c (ARCHS, by
# default sm_90a and sm_90 lowered for chip sm_80) with scripts/gpu/SHIM
# into shared objects, runs scripts/gpu/SCRIPT on them against torch, then
# memcheck on its small case (SMALL=1). C, libcuda and torch (the oracle)
# only.
check_launchers() {
  local what=$1 dir=$2 name=$3 shim=$4 script=$5 small=$6 limit=$7 arch lib
  local archs=${8:-sm_90a sm_90} libs=()
  for arch in $archs; do
    lib=$bin/${name}_$arch.so
    check "build the $what launchers for $arch (cc -shared)" 0 \
      cc -std=c99 -O2 -Wall -Wextra -shared -fPIC -isystem "$cuda/include" \
         -I "$src/$dir-$arch" "$src/$dir-$arch/$name.c" \
         "$root/scripts/gpu/$shim" -L "$cuda/lib64/stubs" -lcuda -o "$lib"
    libs+=("$lib")
  done
  check "aot $what vs torch ($archs)" 0 \
    timeout "$limit" python3 "$root/scripts/gpu/$script" "${libs[@]}"
  if command -v compute-sanitizer > /dev/null; then
    check "compute-sanitizer memcheck: aot $what, small" 0 \
      env "$small=1" timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 \
      python3 "$root/scripts/gpu/$script" "${libs[@]}"
  fi
}

# 3. The backwards, against torch's fp32 autograd.
check_launchers attention_grad grad fmha_aot_grad aot_grad_shim.c aot_backward.py \
  AOT_BACKWARD_SMALL 600
check_launchers "attention_grad, sm_90a only" grad-only fmha_aot_grad \
  aot_grad_shim.c aot_backward.py AOT_BACKWARD_SMALL 300 sm_90a
# 4. Over KV caches (sinks, key lengths, pages, packed query heads, split-KV
#    and its merge, packed sequences), against torch per sequence.
check_launchers "attention over KV caches" kv fmha_aot_kv aot_kvcache_shim.c \
  aot_kvcache.py AOT_KVCACHE_SMALL 300
check_launchers "split decode of packed sequences" kv-split fmha_aot_kv \
  aot_kvcache_shim.c aot_kvcache.py AOT_KVCACHE_SMALL 300 sm_90a
finish
