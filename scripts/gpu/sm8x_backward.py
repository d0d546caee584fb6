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
- The one-pass backward (a dq workspace) up to head dim 128, over 64 keys
  or 64 queries; past 128, where it has no tiling that fits 99 KB,
  refused at load with the message that names the fix.
- flashcore's backward (one-pass and deterministic) and torch SDPA's
  flash backend in one process, interleaved, for scale only: the
  H100/H200 is not a 99 KB GPU.

One line per check, a table last; exit 0 when all pass.
Usage (GPU machine; it installs dist's wheel and sets the environment):
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
    """Python asks for the one-pass backward at d256 on the H100/H200
    (capability 9.0): the JIT refuses its 99 KB-sized load by name."""
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


def timing(b, h, s, d, causal):
    """Forward and backward of flashcore (the one-pass backward up to head
    dim 128, and the deterministic one) and of torch SDPA's flash backend
    (with the H200's 227 KB), interleaved: the median of 5 rounds of 3
    calls each, by CUDA events."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def run():
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=bf16,
                               requires_grad=True) for _ in range(3))
        dout = torch.randn(b, s, h, d, device="cuda", dtype=bf16)

        def ours(deterministic):
            def call():
                o = flashcore.attention(q, k, v, causal=causal,
                                        deterministic=deterministic)
                torch.autograd.grad(o, (q, k, v), dout)
            return call

        def sdpa():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o = torch.nn.functional.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                    is_causal=causal)
                torch.autograd.grad(o, (q, k, v), dout.transpose(1, 2))

        # Forward 4 b h s^2 d (half of it causal), the backward 2.5 times it.
        flops = 4 * b * h * s * s * d * 3.5 / (2 if causal else 1)
        # (Past 128 the one-pass kernel does not fit 99 KB.)
        calls = {"one-pass": ours(False)} if d <= 128 else {}
        calls.update({"deterministic": ours(True), "sdpa flash": sdpa})
        times = {name: [] for name in calls}
        for fn in calls.values():
            fn()
        for _ in range(5):
            for name, fn in calls.items():
                start, end = (torch.cuda.Event(enable_timing=True)
                              for _ in range(2))
                start.record()
                for _ in range(3):
                    fn()
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) / 3)
        return "; ".join(
            f"{name} {sorted(t)[2]:.2f} ms "
            f"{flops / sorted(t)[2] / 1e9:.0f} TFLOP/s"
            for name, t in times.items())
    return run


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
        check(f"d{d} bf16 causal GQA 4:2 Sq=333 Sk=1000 deterministic "
              "(the chip's tiles)",
              backward_case(1, 4, 2, 333, 1000, d, bf16, causal=True,
                            deterministic=True))
    # The one-pass backward (a dq workspace, dq's adds in any order), which
    # Python runs there up to head dim 128: d64 over 64 queries, 80 to 128
    # over 64 keys with one Q and dO buffer.
    for d in (64, 80, 96, 112, 128):
        check(f"one-pass d{d} bf16 causal GQA 4:2 Sq=333 Sk=1000",
              backward_case(1, 4, 2, 333, 1000, d, bf16, causal=True))
        check(f"one-pass d{d} f16 Sq=1000 Sk=17 BHSD",
              backward_case(1, 2, 2, 1000, 17, d, f16, bhsd=True))
    check("one-pass d128 bf16 MQA window 100,50 B=2 Sq=700 Sk=900",
          backward_case(2, 4, 1, 700, 900, 128, bf16, window=(100, 50)))
    check("one-pass d64 f16 causal Sq=Sk=4097",
          backward_case(1, 2, 2, 4097, 4097, 64, f16, causal=True))
    check("one-pass d96 bf16 Sq=Sk=1", backward_case(1, 2, 2, 1, 1, 96, bf16))
    check("one-pass d256 refused at load, naming the fix",
          one_pass_is_refused)
    for b, h, d, causal in ((4, 32, 64, False), (4, 32, 64, True),
                            (4, 16, 128, False), (4, 16, 128, True),
                            (4, 8, 256, True)):
        check(f"timing d{d} {'causal' if causal else 'non-causal'} "
              f"{b} x {h} x 4096 bf16 (H200, for scale)",
              timing(b, h, 4096, d, causal))
    return print_table("sm_80 backward on 99 KB")


if __name__ == "__main__":
    sys.exit(main())
