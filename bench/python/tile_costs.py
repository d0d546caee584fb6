"""The forward's time per query tile split into a fixed cost and a rate per
key, flashcore beside its peers in one process.

At a fixed query length, time = fixed + rate * Sk over a sweep of key
lengths (least squares): `fixed` is what every query tile pays whatever
its keys (the Q load, the first block without a P V beside it, the last
P V without an S, the epilogue), `rate` the steady state. The column
"fixed / 1k keys" says how many 1024-key stretches of the steady state
the fixed cost is worth: the share a tile boundary takes at Sk = 1024.
Non-causal only: with Sq != Sk, SDPA's causal mask is top-left aligned and
flashcore's bottom-right, so a causal sweep would compare different work.

Usage (GPU machine, flashcore installed, FA4 on PYTHONPATH if wanted):
  python3 bench/python/tile_costs.py [--rounds 5] [--dims 64,128]
                                     [--keys 256,512,1024,2048,4096]
                                     [--queries 1024]
"""

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench import (back_to_back_ms, candidates, fa4_func, rotated,  # noqa: E402
                   timed)

# head dim -> (B, H) at Sq = 1024: the ANCHORS rows' shapes.
SHAPES = {64: (16, 32), 128: (16, 16), 256: (16, 8)}


def fit(keys, ms):
    """Least squares ms = fixed + rate * keys: (fixed, rate)."""
    mean_k, mean_t = statistics.fmean(keys), statistics.fmean(ms)
    rate = (sum((k - mean_k) * (t - mean_t) for k, t in zip(keys, ms)) /
            sum((k - mean_k) ** 2 for k in keys))
    return mean_t - rate * mean_k, rate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dims", default="64,128")
    parser.add_argument("--keys", default="256,512,1024,2048,4096")
    parser.add_argument("--queries", type=int, default=1024)
    args = parser.parse_args()
    keys = [int(k) for k in args.keys.split(",")]
    dims = [int(x) for x in args.dims.split(",")]
    for d in dims:
        if d not in SHAPES:
            parser.error(f"--dims: head dim {d} has no row here; expected "
                         f"some of {sorted(SHAPES)}")
    names = ["flashcore", "cudnn"] + (["fa4"] if fa4_func else [])
    sq = args.queries
    print(f"\n## Forward time per query tile: fixed + rate x Sk (Sq = {sq}, "
          f"BSHD bf16, non-causal, "
          f"median of {args.rounds} interleaved rounds; "
          f"{torch.cuda.get_device_name()})\n")
    print("| D | B x H | candidate | " +
          " | ".join(f"Sk {k} (TFLOP/s)" for k in keys) +
          " | fixed (us) | 1k keys (us) | fixed / 1k keys |")
    print("|---|---|---|" + "---|" * (len(keys) + 3))
    for d in dims:
        b, h = SHAPES[d]
        per = {name: [] for name in names}
        for sk in keys:
            q = torch.randn(b, sq, h, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, sk, h, d, device="cuda",
                                dtype=torch.bfloat16) for _ in range(2))
            found = candidates(q, k, v, False)
            times = {name: [] for name in names}
            for round_ in range(args.rounds):
                for name in rotated(names, round_):
                    times[name].append(timed(found[name], back_to_back_ms))
            for name in names:
                per[name].append(statistics.median(times[name]))
            del q, k, v, found
            torch.cuda.empty_cache()
        for name in names:
            fixed, rate = fit(keys, per[name])
            flops = [4 * b * h * sq * sk * d for sk in keys]
            print(f"| {d} | {b}x{h} | {name} | " +
                  " | ".join(f"{f / ms / 1e9:.0f}"
                             for f, ms in zip(flops, per[name])) +
                  f" | {fixed * 1e3:.1f} | {rate * 1024 * 1e3:.1f} | "
                  f"{fixed / (rate * 1024):.2f} |", flush=True)


if __name__ == "__main__":
    main()
