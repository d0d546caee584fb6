"""GPU time per kernel of flashcore's backward (torch.profiler), beside
cuDNN's (torch SDPA, where its causal mask is ours: Sq == Sk or not
causal) and FlashAttention-4's where it is on PYTHONPATH: which kernel a
slow row loses in. Each row: bf16 BSHD inputs, one forward, two warm-up backwards, then
CALLS profiled ones; prints per kernel its mean microseconds a call and the
whole backward's.

Usage (GPU machine, flashcore installed, e.g. by scripts/gpu/python.sh):
  python3 scripts/gpu/backward_kernels.py "B SQ SK HQ HKV D causal" ...
e.g. "8 1000 1000 16 16 128 1" "4 4096 4096 16 1 128 1".
"""

import collections
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import flashcore

try:
    from flash_attn.cute import flash_attn_func as fa4_func
except Exception:  # noqa: BLE001 - FA4 is optional here
    fa4_func = None

CALLS = 5


def kernel_times(forward, leaves, dout):
    """kernel name -> mean GPU microseconds a backward, over CALLS."""
    out = forward()
    out = out[0] if isinstance(out, tuple) else out
    for _ in range(2):
        torch.autograd.grad(out, leaves, dout, retain_graph=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            torch.autograd.grad(out, leaves, dout, retain_graph=True)
        torch.cuda.synchronize()
    times = collections.defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] += event.device_time / CALLS
    return times


def main():
    for row in sys.argv[1:]:
        b, sq, sk, hq, hkv, d, causal = (int(x) for x in row.split())
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        leaves = [t.requires_grad_() for t in (q, k, v)]
        dout = torch.randn_like(q)
        runs = {"flashcore": lambda: flashcore.attention(
            *leaves, causal=bool(causal))}
        def cudnn():
            qt, kt, vt = (t.transpose(1, 2) for t in leaves)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(
                    qt, kt, vt, is_causal=bool(causal),
                    enable_gqa=hq != hkv).transpose(1, 2)
        if sq == sk or not causal:
            runs["cudnn"] = cudnn
        if fa4_func is not None:
            runs["fa4"] = lambda: fa4_func(*leaves, causal=bool(causal))
        print(f"\n{b}x{sq}/{sk}x{hq}/{hkv}x{d} "
              f"{'causal' if causal else 'non-causal'}")
        for name, forward in runs.items():
            times = kernel_times(forward, leaves, dout)
            print(f"  {name}: {sum(times.values()):.1f} us")
            for kernel, us in sorted(times.items(), key=lambda kv: -kv[1]):
                if us >= 1:
                    print(f"    {us:9.1f}  {kernel[:90]}")


if __name__ == "__main__":
    main()
