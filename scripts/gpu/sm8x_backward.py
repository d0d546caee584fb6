"""sm_80's backward as a 99 KB sm_86 or sm_89 GPU runs it, on the GPU
machine's H100/H200: the installed wheel with FLASHCORE_CHIP=sm_80 and
FMHA_MAX_SHARED_BYTES=101376 (set by sm8x-backward.sh before the JIT is
made), so that the JIT tiles and checks every kernel against 99 KB.

- The deterministic backward past head dim 128, whose kernels there stream
  16-row blocks (getSm80GradTiling), against torch's fp32 autograd with
  FlashAttention's criterion (python_check.backward_case) and the same
  bits twice: head dims 136 to 256, Sq != Sk, GQA, MQA, windows, causal and
  not, both layouts, f16 and bf16, lengths 1 to 4097; up to 128 the
  chip's tiles (which fit) beside them.
- The one-pass backward (a dq workspace), which has no tiling that fits
  99 KB: refused at load with the message that names the fix.
- torch's SDPA backward (flash) and flashcore's at d256 in one process,
  interleaved, for scale only: the H100/H200 is not a 99 KB GPU.

One line per check, a table last; exit 0 when all pass.
Usage (GPU machine, after scripts/gpu/python.sh installed the wheel):
  scripts/gpu/sm8x-backward.sh
"""

import os
import sys

import torch

import flashcore
from check_table import check, print_table
from python_check import backward_case

bf16, f16 = torch.bfloat16, torch.float16


def one_pass_is_refused():
    q = torch.randn(1, 300, 2, 256, device="cuda", dtype=bf16,
                    requires_grad=True)
    o = flashcore.attention(q, q, q, causal=True)
    try:
        o.backward(torch.randn_like(o))
    except Exception as e:  # noqa: BLE001 - the message is the check
        message = str(e)
        assert "101376" in message and "no workspace" in message, message
        return message[:160]
    raise AssertionError("the one-pass backward ran past 99 KB")


def timing():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, s, d = 4, 8, 4096, 256
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=bf16,
                           requires_grad=True) for _ in range(3))
    dout = torch.randn(b, s, h, d, device="cuda", dtype=bf16)

    def ours():
        o = flashcore.attention(q, k, v, causal=True, deterministic=True)
        torch.autograd.grad(o, (q, k, v), dout)

    def sdpa():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True)
            torch.autograd.grad(o, (q, k, v), dout.transpose(1, 2))

    flops = 4 * b * h * s * s * d * 3.5 / 2  # forward 2x2, backward 2.5x
    times = {"flashcore": [], "sdpa flash": []}
    for fn in (ours, sdpa):
        fn()
    for _ in range(5):
        for name, fn in (("flashcore", ours), ("sdpa flash", sdpa)):
            start, end = (torch.cuda.Event(enable_timing=True)
                          for _ in range(2))
            start.record()
            for _ in range(3):
                fn()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / 3)
    return "; ".join(
        f"{name} {sorted(t)[2]:.2f} ms {flops / sorted(t)[2] / 1e9:.0f} "
        f"TFLOP/s (forward + backward)" for name, t in times.items())


def main():
    assert os.environ.get("FMHA_MAX_SHARED_BYTES") == "101376" and \
        os.environ.get("FLASHCORE_CHIP") == "sm_80", \
        "run through scripts/gpu/sm8x-backward.sh"
    for d in (136, 160, 192, 224, 256):
        for dtype in (bf16, f16):
            t = str(dtype)[6:]
            check(f"d{d} {t} causal GQA 4:2 Sq=333 Sk=1000",
                  backward_case(1, 4, 2, 333, 1000, d, dtype, causal=True,
                                deterministic=True, asked="kwarg"))
            check(f"d{d} {t} Sq=1000 Sk=17 BHSD",
                  backward_case(1, 2, 2, 1000, 17, d, dtype, bhsd=True,
                                deterministic=True, asked="kwarg"))
    check("d256 bf16 MQA window 100,50 B=2 Sq=700 Sk=900",
          backward_case(2, 4, 1, 700, 900, 256, bf16, window=(100, 50),
                        deterministic=True))
    check("d256 bf16 Sq=Sk=1", backward_case(1, 2, 2, 1, 1, 256, bf16,
                                             deterministic=True))
    check("d256 f16 causal Sq=Sk=4097",
          backward_case(1, 2, 2, 4097, 4097, 256, f16, causal=True,
                        deterministic=True))
    check("d224 bf16 causal Sq=17 Sk=113",
          backward_case(1, 2, 2, 17, 113, 224, bf16, causal=True,
                        deterministic=True))
    for d in (64, 128):
        check(f"d{d} bf16 causal GQA 4:2 Sq=333 Sk=1000 (the chip's tiles)",
              backward_case(1, 4, 2, 333, 1000, d, bf16, causal=True,
                            deterministic=True))
    check("one-pass d256 refused at load, naming the fix",
          one_pass_is_refused)
    check("timing d256 causal 4 x 8 x 4096 bf16 (H100/H200, for scale)",
          timing)
    return print_table("sm_80 backward on 99 KB")


if __name__ == "__main__":
    sys.exit(main())
