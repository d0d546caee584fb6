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


def attention_label(row):
    return f"{row[0]}{' causal' if row[1] == 'yes' else ''} {row[2]}"


def attention_title(direction):
    return (f"Attention {direction} on the {{device}} from Python (BSHD, "
            "back-to-back calls{settled}, one process, rows interleaved)")


def read_device(path):
    """The GPU and how each candidate was timed, from the log's first line
    (bench.py's `# flashcore <version> on <GPU>, torch ..., <date>[, settle
    <ms> ms]`): the title's {device} and {settled}."""
    first = open(path).readline()
    device = first.split(" on ", 1)[1].split(",", 1)[0] if " on " in first \
        else "GPU"
    device = device.removeprefix("NVIDIA ")
    settled = ""
    if "settle " in first:
        ms = first.rsplit("settle ", 1)[1].split()[0]
        if float(ms) > 0:
            settled = f" after {ms} ms of each"
    return {"device": device, "settled": settled}


# mode -> (the table's first column, its first candidate's column, the
# trailing ratio columns left out, the x label of a row, y label, title,
# default output).
MODES = {
    None: ("B x H x S x D", 3, 1, attention_label, "TFLOP/s",
           attention_title("forward"), "docs/python-attention.png"),
    "--backward": ("B x H x S x D", 3, 1, attention_label, "TFLOP/s",
                   attention_title("backward"), "docs/python-backward.png"),
    "--varlen-decode": (
        "B x Sk", 2, 1, lambda row: row[0], "GB/s",
        "Decode of packed sequences on the {device} (one query each, GQA 32:8, "
        "d128 bf16; one process, rows interleaved)",
        "docs/varlen-decode.png"),
    "--decode": (
        "B x Sq x Hq/Hkv x Sk", 2, 2, lambda row: row[0], "GB/s",
        "Decode on the {device} (d128 bf16, non-causal; one process, rows "
        "interleaved; copy: the HBM ceiling for as many bytes)",
        "docs/decode.png"),
}


def main():
    args = sys.argv[1:]
    mode = args.pop(0) if args and args[0] in MODES else None
    first_column, first, ratios, label, ylabel, title, output = MODES[mode]
    header, rows = read_table(args[0], first_column)
    plot(rows, header[first:-ratios], first, [label(r) for r in rows],
         ylabel, title.format(**read_device(args[0])),
         args[1] if len(args) > 1 else output)


if __name__ == "__main__":
    main()
