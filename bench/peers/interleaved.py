"""FlashCore's attention against torch's flash backend (FlashAttention-2),
timed in turns on the same machine: per row of the grid, ours (the
fmha-runner-jit given, `--time`) then flash2 (peers.median_ms), `--rounds`
times, each round on fresh inputs. Prints TFLOP/s per round and the median
of the rounds' ratios. For rows where one bench/run.sh pass cannot tell the
two apart: flash2 moves by several percent from call to call.

Usage (GPU machine, repository root):
  python3 bench/peers/interleaved.py RUNNER [--rows REGEX] [--rounds N]
      [--env VAR=VALUE ...] [--alt-env VAR=VALUE ...]
--rows: a regular expression over "BxHxSxD causal dtype" (as
bench/compare-runners.sh); --env: settings for ours (e.g. FMHA_CHIP=sm_80);
--alt-env: time ours a second time per round with these settings added
(e.g. FMHA_ATTENTION_TILE=64,64,4,1), as a third column."""

import argparse
import os
import re
import statistics
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend

sys.path.insert(0, os.path.dirname(__file__))
from peers import ATTENTION_GRID, grid_key, median_ms, sdpa  # noqa: E402


def settings(pairs):
    return dict(pair.split("=", 1) for pair in pairs)


def ours_tflops(runner, env, b, h, s, d, causal, dtype, seed):
    flags = [f"--batch={b}", f"--heads={h}", f"--seq-q={s}", f"--head-dim={d}",
             f"--dtype={dtype}", f"--seed={seed}", "--time", "--no-check"]
    if causal:
        flags.append("--causal")
    result = subprocess.run([runner, "attention", "--candidate=jit", *flags],
                            env=env, capture_output=True, text=True)
    found = re.search(r"^time.*: ([0-9.]+) TFLOP", result.stdout, re.M)
    if result.returncode != 0 or not found:
        sys.exit(f"interleaved.py: {runner} failed on {b}x{h}x{s}x{d} "
                 f"(exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runner")
    parser.add_argument("--rows", default=".")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", nargs="*", default=[])
    parser.add_argument("--alt-env", nargs="*", default=None)
    args = parser.parse_args()
    env = dict(os.environ, **settings(args.env))
    alt = None if args.alt_env is None else dict(env, **settings(args.alt_env))
    columns = "ours alt flash2" if alt else "ours flash2"
    print(f"row, then per round: {columns}; median ours / flash2"
          + (", alt / flash2" if alt else ""))
    for b, h, s, d, causal, dtype in ATTENTION_GRID:
        key = grid_key(b, h, s, d, causal, dtype)
        name = f"{b}x{h}x{s}x{d} {key[4]} {key[5]}"
        if not re.search(args.rows, name):
            continue
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        rounds, ratios, alt_ratios = [], [], []
        for seed in range(1, args.rounds + 1):
            ours = ours_tflops(args.runner, env, b, h, s, d, causal, key[5], seed)
            cells = [ours]
            if alt:
                cells.append(ours_tflops(args.runner, alt, b, h, s, d, causal,
                                         key[5], seed))
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype)
                       for _ in range(3))
            flash2 = flops / median_ms(
                lambda: sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)) / 1e9
            del q, k, v
            torch.cuda.empty_cache()
            cells.append(flash2)
            rounds.append(" ".join(f"{x:6.1f}" for x in cells))
            ratios.append(ours / flash2)
            if alt:
                alt_ratios.append(cells[1] / flash2)
        summary = f"{statistics.median(ratios):.3f}"
        if alt:
            summary += f" {statistics.median(alt_ratios):.3f}"
        print(f"{name:24} " + " | ".join(rounds) + f" | {summary}", flush=True)


if __name__ == "__main__":
    main()
