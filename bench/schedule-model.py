"""A CTA-load model of the sm_90a forward's persistent tile order
(docs/sm90-attention-notes.md v11, docs/decode-notes.md v24): how much
longer than an even share the busiest CTA runs, for the order the kernel
takes today and another. No GPU: the costs are counted, not timed.

The kernel's CTAs take units x, x + G, ... (G = the grid, one CTA an SM).
A unit is a pair of row blocks R - 1 - i and i of one (batch, head), or the
middle row block of an odd R alone; a row block r costs r + 1 key blocks
plus a fixed cost a tile (--fixed, in key blocks: the Q load, the softmax's
drain and the epilogue; about 1-2 at d128). "pairs first" (today,
PersistentTileSchedule::placeUnit): every (batch, head)'s pairs, then the
middles; "interleaved" (before): each (batch, head)'s pairs and its middle
together, which alias with G where (R + 1) / 2 shares a factor with it.

Packed sequences (--varlen, attention_varlen with Sq = Sk per sequence):
a unit is a row block (non-causal: every key block of its sequence) or a
causal pair of one, each sequence's units after the previous one's;
"index order" takes the sequences as they come, "longest first" the
first 32 by key rows, the rest as they come: the kernel's order without
a mask since decode-notes v25 (under a causal mask it keeps the index
order, which measured no worse there).

Usage: python3 bench/schedule-model.py [--ctas 132] [--fixed 1.0]
           [--block-m 128] [B,H,S ...]
       python3 bench/schedule-model.py --varlen [--heads 32] [L,L,... ...]
(default: the shapes of ab_rows.py's "pairs" rows and the grid's causal
rows at 128-row tiles; with --varlen the two mixed rows of bench.py's
VARLEN_ROWS)
"""

import argparse
import math


def units(heads, row_blocks, fixed, pairs_first):
    """The units' costs in the order the CTAs take them."""
    pairs, middles = [], []
    for head in range(heads):
        here = [(row_blocks - slot) + (slot + 1) + 2 * fixed
                for slot in range(row_blocks // 2)]
        middle = ([row_blocks // 2 + 1 + fixed] if row_blocks % 2 else [])
        if pairs_first:
            pairs += here
            middles += middle
        else:
            pairs += here + middle
    return pairs + middles


def sequence_units(lengths, heads, causal, fixed, block_m, longest_first):
    """Packed sequences' unit costs in the order the CTAs take them."""
    order = list(range(len(lengths)))
    if longest_first:
        order[:32] = sorted(order[:32], key=lambda i: (-lengths[i], i))
    costs = []
    for i in order:
        row_blocks = math.ceil(lengths[i] / block_m)
        if causal:
            costs += units(heads, row_blocks, fixed, pairs_first=True)
        else:
            costs += [row_blocks + fixed] * (heads * row_blocks)
    return costs


def busiest_over_even(costs, ctas):
    loads = [0.0] * ctas
    for unit, cost in enumerate(costs):
        loads[unit % ctas] += cost
    return max(loads) / (sum(costs) / ctas)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ctas", type=int, default=132)
    parser.add_argument("--fixed", type=float, default=1.0)
    parser.add_argument("--block-m", type=int, default=128)
    parser.add_argument("--varlen", action="store_true",
                        help="packed sequences: shapes are lengths L,L,...")
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("shapes", nargs="*")
    args = parser.parse_args()
    if args.varlen:
        rows = args.shapes or [
            "4096,1024,2048,512,3000,100,7000,1500",
            ",".join(["300,17,1200,64,900,2500,33,700"] * 4)]
        print("| lengths | causal | index order | longest first |\n"
              "|---|---|---|---|")
        for row in rows:
            lengths = [int(x) for x in row.split(",")]
            for causal in (False, True):
                before, now = (busiest_over_even(sequence_units(
                    lengths, args.heads, causal, args.fixed, args.block_m,
                    first), args.ctas) for first in (False, True))
                label = (row if len(row) <= 40 else
                         f"{len(lengths)} of {min(lengths)}-{max(lengths)}")
                print(f"| {label} | {causal} | {before:.3f} | {now:.3f} |")
        return
    args.shapes = args.shapes or [
        "32,16,333", "32,32,333", "16,16,640", "8,16,896", "4,16,4097",
        "8,16,1152", "16,16,1000", "16,16,1024", "4,16,4096", "1,16,16384"]
    print("| B x H x S | R | interleaved | pairs first |\n|---|---|---|---|")
    for shape in args.shapes:
        b, h, s = (int(x) for x in shape.split(","))
        r = math.ceil(s / args.block_m)
        before, now = (busiest_over_even(
            units(b * h, r, args.fixed, first), args.ctas)
            for first in (False, True))
        print(f"| {b}x{h}x{s} | {r} | {before:.3f} | {now:.3f} |")


if __name__ == "__main__":
    main()
