"""Plots bench.py's TFLOP/s table (its log, markdown) as grouped bars per
ANCHORS row: docs/python-attention.png.

Usage: python3 bench/python/plot.py BENCH_LOG [OUTPUT_PNG]
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_table(path):
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("| B x H x S x D |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if line.startswith("#"):  # the next table
            break
        if line.startswith("| "):  # other lines are peers' warnings
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return header, rows


def main():
    header, rows = read_table(sys.argv[1])
    output = sys.argv[2] if len(sys.argv) > 2 else "docs/python-attention.png"
    names = header[3:-1]  # candidates, without the ratio column
    labels = [f"{r[0]}{' causal' if r[1] == 'yes' else ''} {r[2]}"
              for r in rows]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(16, 6.5))
    for i, name in enumerate(names):
        values = [float(r[3 + i]) for r in rows]
        ax.bar([x + (i - len(names) / 2 + 0.5) * width
                for x in range(len(rows))], values, width, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Attention forward on the H100 from Python (BSHD, "
                 "back-to-back calls, one process, rows interleaved)")
    ax.legend(ncol=len(names))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print(output)


if __name__ == "__main__":
    main()
