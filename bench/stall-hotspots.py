#!/usr/bin/env python3
"""Where the warps of a kernel wait: reads the SASS source page of an Nsight
Compute report (`ncu -i R --page source --csv --print-source sass`, with
the SourceCounters section collected) and prints the instructions with the
most warp-stall samples, each with its share of all samples and its
largest stall reasons, then the shares by opcode."""
import csv
import sys
from collections import Counter


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    # ncu prints notes before the table: start at the header row.
    start = next((i for i, line in enumerate(lines) if "Source" in line and
                  "Address" in line), None)
    if start is None:
        print(f"{path}: no SASS table (ncu said: {' '.join(lines[:3])[:300]})")
        return 1
    rows = list(csv.DictReader(lines[start:]))
    columns = rows[0].keys() if rows else []
    samples = next((c for c in columns if c.startswith("Warp Stall Sampling (All")),
                   None)
    if samples is None:
        print(f"{path}: no stall-sampling column; columns: {list(columns)}")
        return 1
    reasons = [c for c in columns if c.lower().startswith("stall_") or
               c.startswith("smsp__pcsamp_warps_issue_stalled")]
    total = sum(number(r[samples]) for r in rows) or 1.0
    print(f"{len(rows)} SASS instructions, {total:.0f} samples; top 25:")
    for r in sorted(rows, key=lambda r: -number(r[samples]))[:25]:
        share = number(r[samples]) / total
        top = sorted(((number(r[c]), c) for c in reasons), reverse=True)[:3]
        why = ", ".join(f"{c.split('stalled_')[-1]} {v / total:.1%}"
                        for v, c in top if v > 0)
        print(f"  {share:6.1%}  {r.get('Address', r.get('# Address', '?')):>6}"
              f"  {r['Source'].strip()[:60]:60}  {why}")
    by_opcode = Counter()
    for r in rows:
        opcode = r["Source"].strip().split(" ")[0]
        if opcode.startswith("@"):
            opcode = r["Source"].strip().split(" ")[1]
        by_opcode[opcode.split(".")[0]] += number(r[samples])
    print("by opcode: " + ", ".join(f"{o} {v / total:.1%}"
                                    for o, v in by_opcode.most_common(12)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
