"""Backward TFLOP/s of the installed flashcore on a few rows, for an A/B of
two wheels (scripts/gpu/ab.sh runs it once per wheel, alternating).

Each row: dq, dk and dv by autograd from one retained forward, random bf16
inputs (seed 0), CUDA events around 5 back-to-back backwards, the median of
7 rounds (bench.py's back_to_back_ms); 2.5 x the forward's FLOPs, halved
when causal. Prints "BxHxSxD[c] TFLOP/s" per row.

Usage (GPU machine): python3 scripts/gpu/ab_backward.py BENCH_DIR
(BENCH_DIR: the repository's bench/python, for back_to_back_ms)
"""

import sys

import torch

import flashcore

ROWS = [(16, 16, 1024, 128, False), (16, 16, 1024, 128, True),
        (16, 32, 1024, 64, False), (16, 32, 1024, 64, True),
        (4, 16, 4096, 128, False), (4, 16, 4096, 128, True),
        (4, 32, 4096, 64, True), (16, 8, 1024, 256, True),
        (2, 16, 4096, 256, False), (4, 64, 4096, 32, False),
        (4, 25, 4096, 80, False), (4, 21, 4096, 96, False),
        (4, 21, 4096, 96, True)]


def main():
    sys.path.insert(0, sys.argv[1])
    from bench import back_to_back_ms
    for b, h, s, d, causal in ROWS:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, s, h, d, device="cuda",
                               dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        o = flashcore.attention(q, k, v, causal=causal)
        dout = torch.randn_like(o)
        ms = back_to_back_ms(
            lambda: torch.autograd.grad(o, (q, k, v), dout,
                                        retain_graph=True),
            calls=5, rounds=7)
        flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
        print(f"{b}x{h}x{s}x{d}{'c' if causal else ''} "
              f"{flops / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
