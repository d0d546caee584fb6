"""Plots a bench.py table (its log, markdown) as grouped bars per row:
the attention TFLOP/s table (docs/python-attention.png), with --backward
the backward's (docs/python-backward.png, from a log of `--backward`
alone: both tables start alike), with --varlen-decode, the packed
sequences' decode GB/s (docs/varlen-decode.png), or, with --decode, the
decode table's GB/s beside the copy of as many bytes (docs/decode.png).

Usage: python3 bench/python/plot.py [--backward | --varlen-decode |
                                     --decode] BENCH_LOG [OUTPUT_PNG]
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_table(path, first_column):
    """The header and rows of the log's table whose first column is
    first_column."""
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith(f"| {first_column} |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if line.startswith("#"):  # the next table
            break
        if line.startswith("| "):  # other lines are peers' warnings
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return header, rows


def plot(rows, names, first, labels, ylabel, title, output):
    """Grouped bars: candidate i of each row is column first + i."""
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(16, 6.5))
    for i, name in enumerate(names):
        values = [float(r[first + i]) if r[first + i] != "n/a" else 0.0
                  for r in rows]
        ax.bar([x + (i - len(names) / 2 + 0.5) * width
                for x in range(len(rows))], values, width, label=name)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(ncol=len(names))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print(output)


def main():
    args = sys.argv[1:]
    varlen = args[:1] == ["--varlen-decode"]
    if varlen:
        args = args[1:]
        header, rows = read_table(args[0], "B x Sk")
        plot(rows, header[2:-1], 2, [r[0] for r in rows], "GB/s",
             "Decode of packed sequences on the H100 (one query each, GQA "
             "32:8, d128 bf16; one process, rows interleaved)",
             args[1] if len(args) > 1 else "docs/varlen-decode.png")
        return
    if args[:1] == ["--decode"]:
        args = args[1:]
        header, rows = read_table(args[0], "B x Sq x Hq/Hkv x Sk")
        # The candidates and the copy; the two ratios left out.
        plot(rows, header[2:-2], 2, [r[0] for r in rows], "GB/s",
             "Decode on the H200 (d128 bf16, non-causal; one process, rows "
             "interleaved; copy: the HBM ceiling for as many bytes)",
             args[1] if len(args) > 1 else "docs/decode.png")
        return
    backward = args[:1] == ["--backward"]
    if backward:
        args = args[1:]
    header, rows = read_table(args[0], "B x H x S x D")
    plot(rows, header[3:-1], 3,
         [f"{r[0]}{' causal' if r[1] == 'yes' else ''} {r[2]}" for r in rows],
         "TFLOP/s",
         f"Attention {'backward' if backward else 'forward'} on the H100 "
         "from Python (BSHD, back-to-back calls, one process, rows "
         "interleaved)",
         args[1] if len(args) > 1 else
         f"docs/python-{'backward' if backward else 'attention'}.png")


if __name__ == "__main__":
    main()
