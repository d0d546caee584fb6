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
    reasons_by_opcode = {}
    for r in rows:
        words = r["Source"].strip().split()
        opcode = words[1] if words and words[0].startswith("@") else (
            words[0] if words else "?")
        opcode = opcode.split(".")[0]
        by_opcode[opcode] += number(r[samples])
        counts = reasons_by_opcode.setdefault(opcode, Counter())
        for c in reasons:
            if "Not Issued" not in c:
                counts[c] += number(r[c])
    print("by opcode, with its largest stall reasons:")
    for opcode, value in by_opcode.most_common(8):
        why = ", ".join(f"{c.split('stalled_')[-1]} {v / total:.1%}"
                        for c, v in reasons_by_opcode[opcode].most_common(3)
                        if v > 0)
        print(f"  {opcode:12} {value / total:6.1%}  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
