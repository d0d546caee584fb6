# Shared by the GPU-side scripts (sourced, not run). Needs $root (the
# repository root); check() also $log, install_wheel() and
# sanitize_python() $out.

# The CUDA toolkit's programs (nvcc, compute-sanitizer) and libraries
# (nvJitLink, which the JIT opens) are found where the GPU machine has them.
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# install_wheel [FOLDER [SITE]]: installs FOLDER's flashcore-*.whl
# (default $root/dist: scripts/python/wheel.sh; carry "dist") as a user
# gets it: into SITE (default /tmp/flashcore-site), beside the machine's
# torch, with no compiler and no index (pip's log in $out/install-SITE.log).
# Prints SITE, for PYTHONPATH; fails naming what is missing.
install_wheel() {
  local folder=${1:-$root/dist} site=${2:-/tmp/flashcore-site}
  local wheels=("$folder"/flashcore-*.whl) log
  log=$out/install-$(basename "$site").log
  [ ${#wheels[@]} -eq 1 ] && [ -f "${wheels[0]}" ] ||
    { echo "expected one $folder/flashcore-*.whl, found: ${wheels[*]}" >&2; return 2; }
  rm -rf "$site"
  python3 -m pip install --no-deps --no-index --target "$site" "${wheels[0]}" \
      > "$log" 2>&1 ||
    { cat "$log" >&2; echo "${wheels[0]} did not install" >&2; return 2; }
  echo "$site"
}

# sanitize_python NAME D CALL: compute-sanitizer memcheck, racecheck and
# synccheck on a python3 that makes q [2, 150, 4, D] and k [2, 170, 2, D]
# (bf16, seed 1) and then runs `o = CALL` (an expression that launches;
# "None; STATEMENTS" for more) with the flashcore on PYTHONPATH. One line
# per tool; logs $out/sanitize-NAME-TOOL.log; sets status=1 on an error.
sanitize_python() {
  local name=$1 call=$3 tool log rc
  for tool in memcheck racecheck synccheck; do
    log=$out/sanitize-$name-$tool.log
    compute-sanitizer --tool "$tool" --error-exitcode 1 python3 -c "
import torch, flashcore
torch.manual_seed(1)
q = torch.randn(2, 150, 4, $2, device='cuda', dtype=torch.bfloat16)
k = torch.randn(2, 170, 2, $2, device='cuda', dtype=torch.bfloat16)
o = $call
torch.cuda.synchronize()
" > "$log" 2>&1
    rc=$?
    printf '%-44s %s\n' "sanitize $name $tool" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (see $log)")"
    [ $rc -eq 0 ] || status=1
  done
}

# Prints the path of fmha-runner-jit (or NAME) unpacked from $root/.gpu/,
# or fails naming the packing step.
unpack_runner() {
  local name=${1:-fmha-runner-jit} to=/tmp/flashcore-bin/${1:-fmha-runner-jit}
  mkdir -p /tmp/flashcore-bin
  xz -dc "$root/.gpu/$name.xz" > "$to" 2> /dev/null && chmod +x "$to" || {
    echo "no .gpu/$name.xz: run scripts/gpu/pack.sh" >&2; return 2; }
  echo "$to"
}

# runner_rate LOG BYTES COMMAND...: runs COMMAND (an fmha-runner attention
# call with --time), appending its errors to LOG, and prints "MS | GB/S":
# the median time a call of its back-to-back launches and BYTES over that
# time (single launches run on a cooler chip than a framework's loop).
runner_rate() {
  local log=$1 bytes=$2 ms; shift 2
  ms=$("$@" 2>>"$log" | grep "^back-to-back time: median" | sed -E 's/.*median ([0-9.]+) ms.*/\1/')
  echo "$ms | $(awk -v b="$bytes" -v ms="$ms" 'BEGIN { if (ms > 0) printf "%.0f", b / ms / 1e6 }')"
}

# check NAME COMMAND...: runs COMMAND, appending its output to $log, and
# adds a PASS row when it exits 0, else a FAIL row with the status.
rows=()
check() {
  local name=$1; shift
  { echo "\$ $*"; "$@"; } >> "$log" 2>&1
  local status=$?
  if [ "$status" -eq 0 ]; then rows+=("$(printf '%-62s PASS' "$name")")
  else rows+=("$(printf '%-62s FAIL (exit %s)' "$name" "$status")"); fi
}

# Prints the table; the status is 0 when every row passed.
finish() {
  printf '%s\n' "${rows[@]}"
  ! printf '%s\n' "${rows[@]}" | grep -q FAIL
}
