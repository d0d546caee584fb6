"""The deterministic backward against FlashAttention-4's, in one process.

flashcore's backward under torch.use_deterministic_algorithms(True) (on
sm_90a the one-pass kernel with its dQ adds in a fixed order), beside FA4's
flash_attn_func(..., deterministic=True) where FA4 is importable and
--fa4 is given, and flashcore's default backward (adds in any order).
dq, dk and dv by autograd from one retained forward, random bf16 inputs;
CUDA events around 5 back-to-back backwards, the median of 5 rounds
(bench.py's back_to_back_ms);
TFLOP/s at 2.5 x the forward's FLOPs.

Usage (GPU machine, flashcore installed, FA4 on PYTHONPATH if wanted):
  python3 bench/python/deterministic_backward.py [--fa4]
Prints a line per row (docs/BENCHMARKS.md, "Attention backward,
deterministic").
"""

import os
import sys

import torch

import flashcore

sys.path.insert(0, os.path.dirname(__file__))
from bench import back_to_back_ms  # noqa: E402

ROWS = [(4, 32, 4096, 64, True), (4, 32, 4096, 64, False),
        (4, 16, 4096, 128, True), (4, 16, 4096, 128, False),
        (8, 16, 1024, 128, True)]


def milliseconds(fn):
    return back_to_back_ms(fn, calls=5, rounds=5)


def main():
    fa4 = None
    if "--fa4" in sys.argv:
        from flash_attn.cute import flash_attn_func as fa4
    torch.use_deterministic_algorithms(True)
    for b, h, s, d, causal in ROWS:
        q, k, v = (torch.randn(b, s, h, d, device="cuda",
                               dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        o = flashcore.attention(q, k, v, causal=causal)
        dout = torch.randn_like(o)
        flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)

        def backward(out):
            return lambda: torch.autograd.grad(out, (q, k, v), dout,
                                               retain_graph=True)
        t = milliseconds(backward(o))
        line = (f"{b}x{h}x{s}x{d}{' causal' if causal else ''}: flashcore "
                f"det {t:.3f} ms {flops / t / 1e9:.0f} TFLOP/s")
        if fa4 is not None:
            torch.use_deterministic_algorithms(False)
            t_any = milliseconds(backward(o))
            torch.use_deterministic_algorithms(True)
            line += f", flashcore any order {flops / t_any / 1e9:.0f}"
            o_fa4 = fa4(q, k, v, causal=causal, deterministic=True)
            o_fa4 = o_fa4[0] if isinstance(o_fa4, tuple) else o_fa4
            t_fa4 = milliseconds(backward(o_fa4))
            line += f", fa4 det {t_fa4:.3f} ms {flops / t_fa4 / 1e9:.0f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
