#!/usr/bin/env bash
# Nsight Compute profile of the generated attention kernel on a few rows of
# ../shared/ANCHORS.md (GPU machine, .gpu/ carried): the first launch of the
# kernel named `attention` (ncu locks the clocks to base; the durations are
# for comparing rows, not for the benchmark tables). Full reports go to
# $OUT/ncu-*.txt; the lines that say where the time goes are printed.
# FMHA_CHIP picks the chip as for the runner; PROFILE_ROWS replaces the rows
# (one runner flag list per line). PROFILE_SOURCE=1 also samples warp stalls
# per SASS instruction: $OUT/ncu-N-source.csv holds them, and the
# instructions with the most samples are printed (where the warps wait).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/gpu/lib.sh"
runner=$(unpack_runner) || exit 2
out=${OUT:-/tmp/flashcore-bench}
mkdir -p "$out"
rows=${PROFILE_ROWS:-"--batch=16 --heads=16 --seq-q=1024 --head-dim=128
--batch=16 --heads=16 --seq-q=1024 --head-dim=128 --causal
--batch=1 --heads=16 --seq-q=16384 --head-dim=128"}
sections="--section SpeedOfLight --section ComputeWorkloadAnalysis
  --section MemoryWorkloadAnalysis --section WarpStateStats
  --section LaunchStats --section Occupancy"
[ "${PROFILE_SOURCE:-0}" = 1 ] && sections="$sections --section SourceCounters"
n=0
while read -r flags; do
  [ -n "$flags" ] || continue
  n=$((n + 1))
  report=$out/ncu-$n.txt
  echo "== $flags" | tee "$report"
  ncu -k attention -c 1 $sections -o "$out/ncu-$n" -f "$runner" attention \
    --candidate=jit --no-check --time $flags >> "$report" 2>&1
  ncu -i "$out/ncu-$n.ncu-rep" >> "$report" 2>&1
  grep -E "^ +(Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Hit Rate|L1/TEX Hit Rate|Executed Ipc Active|Issue Slots Busy|Registers Per Thread|Grid Size|Achieved Occupancy|Warp Cycles Per Issued Instruction|No Eligible)" "$report" |
    sed 's/  */ /g'
  grep -E "(stall|Stall|spent|cycles)" "$report" | grep -v "^ *-" | head -6 | cut -c1-220
  if [ "${PROFILE_SOURCE:-0}" = 1 ]; then
    ncu -i "$out/ncu-$n.ncu-rep" --page source --csv --print-source sass \
      > "$out/ncu-$n-source.csv" 2>&1
    python3 "$root/bench/stall-hotspots.py" "$out/ncu-$n-source.csv"
  fi
  rm -f "$out/ncu-$n.ncu-rep"
done <<< "$rows"
