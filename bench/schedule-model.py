"""A CTA-load model of the sm_90a forward's persistent tile order under a
causal mask (docs/sm90-attention-notes.md v11): how much longer than an
even share the busiest CTA runs, for the order the kernel takes today and
the one it took before. No GPU: the costs are counted, not timed.

The kernel's CTAs take units x, x + G, ... (G = the grid, one CTA an SM).
A unit is a pair of row blocks R - 1 - i and i of one (batch, head), or the
middle row block of an odd R alone; a row block r costs r + 1 key blocks
plus a fixed cost a tile (--fixed, in key blocks: the Q load, the softmax's
drain and the epilogue; about 1-2 at d128). "pairs first" (today,
PersistentTileSchedule::placeUnit): every (batch, head)'s pairs, then the
middles; "interleaved" (before): each (batch, head)'s pairs and its middle
together, which alias with G where (R + 1) / 2 shares a factor with it.

Usage: python3 bench/schedule-model.py [--ctas 132] [--fixed 1.0]
           [--block-m 128] [B,H,S ...]
(default: the shapes of ab_rows.py's "pairs" rows and the grid's causal
rows at 128-row tiles)
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
    parser.add_argument("shapes", nargs="*", default=[
        "32,16,333", "32,32,333", "16,16,640", "8,16,896", "4,16,4097",
        "8,16,1152", "16,16,1000", "16,16,1024", "4,16,4096", "1,16,16384"])
    args = parser.parse_args()
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
