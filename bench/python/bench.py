"""flashcore from Python against its peers, in one process, rows interleaved:

1. Host cost per call (us), on a problem small enough that the host is the
   bottleneck: flashcore.attention, FlashCore's C API through ctypes with a
   descriptor built once (the floor under flashcore.attention), torch's
   F.scaled_dot_product_attention (default dispatch, and its cuDNN and flash
   backends) and FlashAttention-4's flash_attn_func where installed. Each
   round times N back-to-back calls of each candidate in turn; the median
   of the rounds is reported.
2. TFLOP/s on the attention rows of ../shared/ANCHORS.md: flashcore.attention
   and the C API (the same kernel) to show what Python costs, beside cuDNN,
   flash2 and FA4, CUDA events (bench/peers/peers.py's median_ms), random
   inputs, candidates interleaved per row.

Usage (GPU machine, flashcore installed, FA4 on PYTHONPATH if wanted):
  python3 bench/python/bench.py [--rounds 7] [--calls 2000] [--rows REGEX]
Prints markdown tables for docs/BENCHMARKS.md.
"""

import argparse
import ctypes
import datetime
import os
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashcore
from flashcore import _capi, _ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "peers"))
from peers import ATTENTION_GRID, median_ms  # noqa: E402

try:
    from flash_attn.cute import flash_attn_func as fa4_func
except Exception as e:  # noqa: BLE001 - FA4 is optional here
    fa4_func = None
    print(f"FA4 not available ({type(e).__name__}: {e})", file=sys.stderr)


def c_api_call(q, k, v, causal):
    """FmhaAttentionEx with the descriptor packed once: the C API's own cost
    through ctypes, what flashcore.attention adds Python to."""
    o = torch.empty_like(q)
    _ops._pack_attention(q, k, v, (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                   o.data_ptr(), 0),
                         o.stride(), causal, None, None)
    desc = ctypes.create_string_buffer(_ops._state.desc.raw,
                                       _capi.ATTENTION_DESC.size)
    device = q.device.index
    jit, stream = _capi.jit(device), torch.cuda.current_stream().cuda_stream
    message = ctypes.c_void_p()
    fn, address, ref = (_capi.lib().fmhaAttentionEx, ctypes.addressof(desc),
                        ctypes.byref(message))

    def call():
        if fn(jit, address, stream, 0, ref):
            _capi.raise_for(1, message)
    return call


def candidates(q, k, v, causal):
    """name -> a call, on FlashAttention's [B, S, H, D] tensors (SDPA gets
    their [B, H, S, D] transposes)."""
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    found = {
        "flashcore": lambda: flashcore.attention(q, k, v, causal=causal),
        "C API": c_api_call(q, k, v, causal),
        "sdpa": lambda: F.scaled_dot_product_attention(qt, kt, vt,
                                                       is_causal=causal),
    }
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash2", SDPBackend.FLASH_ATTENTION)):
        def call(backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt,
                                                      is_causal=causal)
        found[name] = call
    if fa4_func is not None:
        found["fa4"] = lambda: fa4_func(q, k, v, causal=causal)
    return found


def host_us(fn, calls):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def host_cost(rounds, calls):
    b, s, h, d = 1, 128, 8, 64
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    found = candidates(q, k, v, False)
    # sdpa_kernel costs a context manager per call: time it apart, once
    # entered, so that its column is the backend's own.
    for name in ("cudnn", "flash2"):
        backend = (SDPBackend.CUDNN_ATTENTION if name == "cudnn"
                   else SDPBackend.FLASH_ATTENTION)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        found[name] = (backend, lambda: F.scaled_dot_product_attention(
            qt, kt, vt))
    times = {name: [] for name in found}
    for name, fn in found.items():  # warm-up: compiles, autotunes
        run(fn, 20)
    for _ in range(rounds):
        for name, fn in found.items():
            times[name].append(run(fn, calls))
    print(f"\n## Host cost per call, B={b} S={s} H={h} D={d} bf16 "
          f"non-causal ({calls} calls x {rounds} rounds, median)\n")
    print("| candidate | us per call | rounds (min-max) |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} | "
              f"{min(values):.1f}-{max(values):.1f} |")


def run(fn, calls):
    if isinstance(fn, tuple):
        backend, call = fn
        with sdpa_kernel(backend):
            return host_us(call, calls)
    return host_us(fn, calls)


def tflops_rows(rows_regex, rounds):
    print("\n## Forward TFLOP/s on the ANCHORS rows (BSHD; median of "
          f"{rounds} interleaved rounds of median_ms)\n")
    names = ["flashcore", "C API", "cudnn", "flash2"] + (
        ["fa4"] if fa4_func is not None else [])
    print("| B x H x S x D | causal | dtype | " + " | ".join(names) +
          " | flashcore / C API |\n|---|---|---|" + "---|" * (len(names) + 1))
    for b, h, s, d, causal, dtype in ATTENTION_GRID:
        key = f"{b}x{h}x{s}x{d} {'causal' if causal else 'non-causal'}"
        if rows_regex and not re.search(rows_regex, key):
            continue
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dtype)
                   for _ in range(3))
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        found = candidates(q, k, v, causal)
        per = {name: [] for name in names}
        for _ in range(rounds):
            for name in names:
                per[name].append(flops / median_ms(found[name], runs=10) / 1e9)
        med = {name: statistics.median(per[name]) for name in names}
        print(f"| {b}x{h}x{s}x{d} | {'yes' if causal else 'no'} | "
              f"{'fp16' if dtype == torch.float16 else 'bf16'} | " +
              " | ".join(f"{med[n]:.0f}" for n in names) +
              f" | {med['flashcore'] / med['C API']:.3f} |", flush=True)
        del q, k, v, found
        torch.cuda.empty_cache()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rows", default="")
    parser.add_argument("--no-tflops", action="store_true")
    args = parser.parse_args()
    print(f"# flashcore {flashcore.version()} on "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{datetime.date.today()}")
    host_cost(args.rounds, args.calls)
    if not args.no_tflops:
        tflops_rows(args.rows, max(3, args.rounds // 2))


if __name__ == "__main__":
    main()
