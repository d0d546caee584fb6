"""Forward TFLOP/s of the installed flashcore on a few rows, for an A/B of
two wheels (scripts/gpu/ab.sh with AB=forward runs it once per wheel,
alternating).

Each row: flashcore.attention on random bf16 BSHD inputs (seed 0), CUDA
events around 10 back-to-back calls, the median of 7 rounds (bench.py's
back_to_back_ms); 4 B H S^2 D FLOPs, halved when causal. The rows are
bench.py's --head-dims shapes (4 x 2048/D heads x 4096) at the head dims
whose tiles are wider than D, and d64/d128 controls. Prints
"BxHxSxD[c] TFLOP/s" per row.

Usage (GPU machine): python3 scripts/gpu/ab_forward.py BENCH_DIR
(BENCH_DIR: the repository's bench/python, for back_to_back_ms)
"""

import sys

import torch

import flashcore

ROWS = [(4, 25, 4096, 80, False), (4, 25, 4096, 80, True),
        (4, 21, 4096, 96, False), (4, 21, 4096, 96, True),
        (4, 28, 4096, 72, False), (4, 18, 4096, 112, False),
        (4, 42, 4096, 48, False), (4, 12, 4096, 160, False),
        (4, 9, 4096, 224, False), (4, 9, 4096, 224, True),
        (4, 32, 4096, 64, False), (4, 16, 4096, 128, False)]


def main():
    sys.path.insert(0, sys.argv[1])
    from bench import back_to_back_ms
    for b, h, s, d, causal in ROWS:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, s, h, d, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        ms = back_to_back_ms(
            lambda: flashcore.attention(q, k, v, causal=causal),
            calls=10, rounds=7)
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        print(f"{b}x{h}x{s}x{d}{'c' if causal else ''} "
              f"{flops / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
