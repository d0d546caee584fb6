#!/usr/bin/env bash
# An A/B of two flashcore wheels on the GPU machine, in alternating
# processes (each with its own disk cache), since both wheels do not fit
# one call's 64 MiB transfer:
#   call 1 (carry the baseline's folder):  scripts/gpu/ab.sh install DIR
#          (installs DIR/flashcore-*.whl into /tmp/site-main)
#   call 2 (carry "dist"), while the machine is still warm:
#          [AB=forward|grid|short|pairs|groups|decode|varlen] [AB_ROWS=REGEX] [CHECKS=REGEX] [SAN=REGEX] scripts/gpu/ab.sh run
#          (installs dist/'s wheel into /tmp/site-new, optionally runs the
#          python_check rows matching CHECKS and sanitize_python.sh's calls
#          matching SAN, then ab_rows.py's backward (with AB=forward its
#          forward, with AB=grid the forward on ANCHORS.md's bf16 rows,
#          with AB=short the forward on short queries, with AB=pairs the
#          causal forward over odd counts of row blocks, with AB=groups the
#          backward under GQA and MQA with MHA controls, with AB=decode
#          decode rows, one query and a few, and decode over KV caches,
#          contiguous and paged, full and ragged, in GB/s;
#          with AB=varlen packed sequences, and the dense call and paged
#          caches on the same tokens) rows
#          three times per wheel, alternating, and prints per row both
#          wheels' rates (TFLOP/s; decode GB/s) and the ratio of medians)
# Logs go to $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/flashcore-gpu}
mkdir -p "$out"
. "$root/scripts/gpu/lib.sh"
install() { # wheel-folder site
  install_wheel "$1" "$2" > /dev/null || { echo "ab.sh: no install" >&2; exit 2; }
}
case "${1:-}" in
install)
  install "${2:?usage: ab.sh install DIR}" /tmp/site-main
  echo "ab.sh: the baseline is in /tmp/site-main" ;;
run)
  [ -d /tmp/site-main ] ||
    { echo "ab.sh: no baseline (the machine was released?): run 'ab.sh install DIR' first" >&2; exit 2; }
  install "$root/dist" /tmp/site-new
  status=0
  if [ -n "${CHECKS:-}" ]; then
    FLASHCORE_CHECKS="$CHECKS" "$root/scripts/gpu/python.sh" > "$out/check.txt" 2>&1 || status=1
    tail -1 "$out/python_check.log"
  fi
  if [ -n "${SAN:-}" ]; then
    "$root/scripts/gpu/sanitize_python.sh" "$SAN" > "$out/sanitize.txt" 2>&1 || status=1
    grep -E "PASS|FAIL" "$out/sanitize.txt"
  fi
  rm -rf /tmp/cache-main /tmp/cache-new
  for round in 1 2 3; do
    for wheel in main new; do
      (cd /tmp && FMHA_CACHE_DIR=/tmp/cache-$wheel PYTHONPATH=/tmp/site-$wheel \
        python3 "$root/scripts/gpu/ab_rows.py" "${AB:-backward}" "$root/bench/python") \
        > "$out/ab-$wheel-$round.txt" 2>&1 || status=1
    done
  done
  python3 - "$out" <<'PY'
import collections, glob, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for wheel in ("main", "new"):
    for path in sorted(glob.glob(f"{sys.argv[1]}/ab-{wheel}-*.txt")):
        for line in open(path):
            fields = line.split()
            if len(fields) == 2:
                rows[fields[0]][wheel].append(float(fields[1]))
print("| row | baseline | new | new / baseline (medians) |")
print("|---|---|---|---|")
for row, runs in rows.items():
    if runs["main"] and runs["new"]:
        ratio = statistics.median(runs["new"]) / statistics.median(runs["main"])
        print(f"| {row} | {sorted(runs['main'])} | {sorted(runs['new'])} | {ratio:.3f} |")
PY
  exit $status ;;
*)
  echo "usage: ab.sh install DIR | ab.sh run" >&2; exit 2 ;;
esac
