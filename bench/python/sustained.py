"""The forward sustained against single launches, with the chip's SM clock
and power: flashcore beside its peers in one process.

A GPU at its power cap lowers its clocks; a single launch between two
events (fmha-runner's `--time`) starts on a cooler chip than the tenth of
ten back-to-back calls (bench.py's back_to_back_ms, ANCHORS.md's method).
For each row and candidate this prints both rates and the median SM clock
(MHz) and board power (W) that nvidia-smi reports over the last two
thirds of a run of back-to-back calls lasting about two seconds.

Usage (GPU machine, flashcore installed, FA4 on PYTHONPATH if wanted):
  python3 bench/python/sustained.py [--rounds 2]
      [--rows 4x16x4096x128,1x16x16384x128,4x32x4096x64]
"""

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench import candidates, timed  # noqa: E402

NAMES = ("flashcore", "fa4", "cudnn")


def clock_and_power():
    fields = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
         "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True).stdout.split(",")
    return float(fields[0]), float(fields[1])


def sustained(call, flops, seconds=2.0):
    """TFLOP/s of back-to-back calls for about `seconds`, with the median SM
    clock and power sampled over the run's last two thirds."""
    for _ in range(5):
        call()
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    start.record()
    for _ in range(10):
        call()
    end.record()
    end.synchronize()
    calls = max(10, int(seconds * 1e3 / (start.elapsed_time(end) / 10)))
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append(clock_and_power())
            time.sleep(0.05)
    sampler = threading.Thread(target=sample)
    sampler.start()
    start.record()
    for _ in range(calls):
        call()
    end.record()
    end.synchronize()
    done.set()
    sampler.join()
    late = samples[len(samples) // 3:] or samples
    return (flops / (start.elapsed_time(end) / calls) / 1e9,
            statistics.median(c for c, _ in late),
            statistics.median(p for _, p in late))


def isolated(call, flops, runs=30):
    """TFLOP/s of single launches 5 ms apart (median)."""
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        time.sleep(0.005)
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return flops / statistics.median(times) / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rows",
                        default="4x16x4096x128,1x16x16384x128,4x32x4096x64",
                        help="B x H x S x D, non-causal, BSHD bf16")
    args = parser.parse_args()
    print("| round | B x H x S x D | candidate | single launches | sustained "
          "| SM MHz | W |")
    print("|---|---|---|---|---|---|---|")
    for round_ in range(args.rounds):
        for row in args.rows.split(","):
            b, h, s, d = (int(x) for x in row.split("x"))
            q, k, v = (torch.randn(b, s, h, d, device="cuda",
                                   dtype=torch.bfloat16) for _ in range(3))
            found = candidates(q, k, v, False)
            flops = 4 * b * h * s * s * d
            for name in (n for n in NAMES if n in found):
                single = timed(found[name], isolated, flops)
                rate, clock, power = timed(found[name], sustained, flops)
                print(f"| {round_ + 1} | {row} | {name} | {single:.0f} | "
                      f"{rate:.0f} | {clock:.0f} | {power:.0f} |", flush=True)
                time.sleep(1.0)


if __name__ == "__main__":
    main()
