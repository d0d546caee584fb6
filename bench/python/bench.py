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
   flash2 and FA4, CUDA events around 10 back-to-back calls (as
   ANCHORS.md), random inputs, candidates interleaved per row.
3. Backward TFLOP/s (--backward) on the same rows: dq, dk and dv by autograd from one
   retained forward, 2.5 x the forward's FLOPs, with cuDNN, flash2 and FA4.
4. Decode GB/s (--decode): the decode rows of ANCHORS.md and longer caches,
   GQA, and a few query tokens per sequence, bytes of q + k + v + o over
   the time, with cuDNN, flash2 and FA4 (SDPA with enable_gqa, non-causal:
   SDPA's is_causal is top-left aligned, which for Sq < Sk is not decode)
   and a device-to-device copy of as many bytes (the HBM ceiling, in the
   same rounds).
   With --kvcache, decode over KV caches with cache_seqlens (full and
   ragged), contiguous and paged (pages of 16 and 256 rows, shuffled),
   beside the dense calls on full caches and FA4's seqused_k (and its
   page_table).
5. Forward TFLOP/s at head dims outside that grid (--head-dims), with the
   peers that take them.
6. Softcap and sinks (--features): the forward with each beside the same
   kernels without, flashcore and FA4, cuDNN as the yardstick.
7. Packed sequences (--varlen): attention_varlen over mixed lengths, and
   over equal ones beside the dense call on the same tokens, with FA4's
   varlen and dense calls.
8. v's head dim apart from q's (--value-head-dims): DeepSeek's 192/128,
   with the SDPA backends and FA4 where they take it.
9. Softcap's backward (--softcap-backward): beside the plain backward,
   flashcore and FA4.
10. Decode of packed sequences (--varlen-decode): attention_varlen with one
   query per sequence, GB/s, with max_seqlen_k (its keys may split) and
   without (they may not), beside the dense decode call on the same cache,
   cuDNN's and flash2's (SDPA, dense) and FA4's varlen call.
11. Backward TFLOP/s at head dims outside the grid (--head-dims-backward,
   --rows picks them): the forward's rows of 5., with cuDNN, flash2 and FA4
   where they take them; --value-head-dims-backward the same for 8.'s rows.
12. Host cost per backward (--backward-host): flashcore's and the peers'
   on the host-cost problem, flashcore's op and implementation alone, and
   whether a backward waits for the GPU.
13. Shapes outside the grid (--shapes, --shapes-backward; --rows picks
   them): GQA and MQA prefill, odd lengths, Sq != Sk (a chunk of queries
   over a longer context), many short sequences and one long one, forward
   or backward TFLOP/s with cuDNN, flash2 (SDPA with enable_gqa, where its
   causal mask is ours) and FA4.
Each round starts with a different candidate, every other round in reverse
order (rotated), and each candidate runs back to back for --settle-ms of
GPU time before it is timed (its own steady state on a power-capped chip,
not the one its predecessor left).

Usage (GPU machine, flashcore installed, FA4 on PYTHONPATH if wanted):
  python3 bench/python/bench.py [--rounds 7] [--calls 2000] [--rows REGEX]
                                [--decode] [--kvcache] [--backward] [--head-dims]
                                [--features] [--varlen] [--varlen-decode]
                                [--value-head-dims] [--softcap-backward]
                                [--shapes] [--shapes-backward]
                                [--backward-host]
                                [--no-host]
                                [--no-tflops]
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
from peers import ATTENTION_GRID  # noqa: E402

try:
    from flash_attn.cute import flash_attn_func as fa4_func
    from flash_attn.cute import flash_attn_varlen_func as fa4_varlen_func
except Exception as e:  # noqa: BLE001 - FA4 is optional here
    fa4_func = fa4_varlen_func = None
    print(f"FA4 not available ({type(e).__name__}: {e})", file=sys.stderr)


def c_api_call(q, k, v, causal):
    """FmhaAttentionEx with the descriptor packed once: the C API's own cost
    through ctypes, what flashcore.attention adds Python to."""
    o = _ops._empty_output(q, v)
    _ops._pack_attention(q, k, v, (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                   o.data_ptr(), 0),
                         o.stride(), causal, None, None, 0.0)
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
    call.keep_alive = (desc, o)  # address points into desc
    return call


def sdpa_masks_alike(q, k, causal):
    """Whether SDPA's is_causal masks as flashcore and FlashAttention do:
    SDPA aligns the causal diagonal top-left, FlashAttention bottom-right
    (query i sees keys up to i + Sk - Sq), the same mask only where Sq ==
    Sk. Elsewhere the SDPA backends are left out ('-' in a table)."""
    return not causal or q.shape[1] == k.shape[1]


def candidates(q, k, v, causal):
    """name -> a call, on FlashAttention's [B, S, H, D] tensors (SDPA gets
    their [B, H, S, D] transposes). The SDPA backends are (backend, call)
    pairs: the call runs inside sdpa_kernel(backend), entered once per timed
    loop rather than per call, so that their columns are the backends' own
    cost."""
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    gqa = q.shape[2] != k.shape[2]

    def sdpa():
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal,
                                              enable_gqa=gqa)
    found = {
        "flashcore": lambda: flashcore.attention(q, k, v, causal=causal),
        "C API": c_api_call(q, k, v, causal),
    }
    if sdpa_masks_alike(q, k, causal):
        found.update({
            "sdpa": sdpa,
            "cudnn": (SDPBackend.CUDNN_ATTENTION, sdpa),
            "flash2": (SDPBackend.FLASH_ATTENTION, sdpa),
            "efficient": (SDPBackend.EFFICIENT_ATTENTION, sdpa),
        })
    if fa4_func is not None:
        found["fa4"] = lambda: fa4_func(q, k, v, causal=causal)
    return found


def timed(fn, measure, *args):
    """measure(call, *args) for a candidate of candidates()."""
    if isinstance(fn, tuple):
        backend, call = fn
        with sdpa_kernel(backend):
            return measure(call, *args)
    return measure(fn, *args)


def host_us(fn, calls):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def rotated(names, round_):
    """names, starting from a different one each round, and in reverse
    order every other round: under sustained load the chip's clocks drop
    (on the H200 it runs at its power cap), which would favour whoever
    runs first, and a fixed order would have each candidate start where
    the same one left the clocks."""
    shift = round_ % len(names)
    order = names[shift:] + names[:shift]
    return order[::-1] if round_ % 2 else order


# GPU milliseconds of back-to-back calls that back_to_back_ms runs before it
# times (--settle-ms): enough for the clocks to settle at the candidate's
# own power draw, so that its rate does not depend on the candidate before
# it (a few 10-call rounds of a long row last ~50 ms, inside the time the
# power limit takes to respond).
settle_ms = 200.0


def settle(fn, ms):
    """Runs fn back to back until about `ms` of GPU time have passed."""
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    while True:
        for _ in range(10):
            fn()
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        if start.elapsed_time(end) >= ms:
            return


def back_to_back_ms(fn, calls=10, rounds=5):
    """Median over rounds of the mean time of `calls` back-to-back calls
    between two CUDA events (ANCHORS.md's method: the GPU's time per call
    once the host keeps ahead of it), after `settle_ms` of them."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if settle_ms > 0:
        settle(fn, settle_ms)
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def host_cost(rounds, calls):
    b, s, h, d = 1, 128, 8, 64
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    found = candidates(q, k, v, False)
    times = {name: [] for name in found}
    for fn in found.values():  # warm-up: compiles, autotunes
        timed(fn, host_us, 20)
    for round_ in range(rounds):
        for name in rotated(list(found), round_):
            times[name].append(timed(found[name], host_us, calls))
    print(f"\n## Host cost per call, B={b} S={s} H={h} D={d} bf16 "
          f"non-causal ({calls} calls x {rounds} rounds, median)\n")
    print("| candidate | us per call | rounds (min-max) |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} | "
              f"{min(values):.1f}-{max(values):.1f} |")


def tflops_rows(rows_regex, rounds):
    print("\n## Forward TFLOP/s on the ANCHORS rows (BSHD; median of "
          f"{rounds} interleaved rounds of back_to_back_ms)\n")
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
        for round_ in range(rounds):
            for name in rotated(names, round_):
                ms = timed(found[name], back_to_back_ms)
                per[name].append(flops / ms / 1e9)
        med = {name: statistics.median(per[name]) for name in names}
        print(f"| {b}x{h}x{s}x{d} | {'yes' if causal else 'no'} | "
              f"{'fp16' if dtype == torch.float16 else 'bf16'} | " +
              " | ".join(f"{med[n]:.0f}" for n in names) +
              f" | {med['flashcore'] / med['C API']:.3f} |", flush=True)
        del q, k, v, found
        torch.cuda.empty_cache()


def runnable_medians(found, names, amount, divisor, rounds):
    """name -> the median of amount / ms / divisor over `rounds` interleaved
    rounds of back_to_back_ms, for the candidates of `names` in `found`
    that run (a peer that refuses the input is left out, its error on
    stderr)."""
    usable = []
    for name in (n for n in names if n in found):
        try:
            timed(found[name], lambda fn: fn())
            torch.cuda.synchronize()
            usable.append(name)
        except Exception as e:  # noqa: BLE001 - report, go on
            print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
    per = {name: [] for name in usable}
    for round_ in range(rounds):
        for name in rotated(usable, round_):
            per[name].append(amount / timed(found[name], back_to_back_ms) /
                             divisor)
    return {name: statistics.median(per[name]) for name in usable}


def print_header(columns, names):
    """A table's header: the leading columns, each of names, then flashcore
    over the best peer (print_row's cells)."""
    titles = list(columns) + list(names) + ["flashcore / best"]
    print("| " + " | ".join(titles) + " |\n|" + "---|" * len(titles))


def print_row(label, causal, names, med, ratio=True):
    """One table row: label, causal, each of names' median ('-' for a
    candidate that did not run) and, with ratio, flashcore over the best
    peer that ran."""
    cells = [label, "yes" if causal else "no"] + [
        f"{med[n]:.0f}" if n in med else "-" for n in names]
    if ratio:
        peers = [med[n] for n in med if n != "flashcore"]
        cells.append(f"{med['flashcore'] / max(peers):.2f}"
                     if peers and "flashcore" in med else "-")
    print("| " + " | ".join(cells) + " |", flush=True)


def tflops_row(label, q, k, v, causal, flops, names, rounds, backward):
    """A table row of TFLOP/s: the candidates of `names` that take q, k, v
    (forward, or with backward its backward), then frees the GPU memory."""
    found = (backward_candidates(q, k, v, causal) if backward
             else candidates(q, k, v, causal))
    med = runnable_medians(found, names, flops, 1e9, rounds)
    print_row(label, causal, names, med)
    del found
    torch.cuda.empty_cache()


# Head dims outside ANCHORS.md's grid (64, 128, 256): B x H x S with
# H x D near 2048 (as the grid's 4k rows), bf16.
HEAD_DIM_ROWS = [(4, max(1, 2048 // d), 4096, d)
                 for d in (32, 40, 48, 72, 80, 96, 112, 160, 192, 224)]


def head_dim_rows(rows_regex, rounds, backward=False):
    """Forward TFLOP/s (or, with backward, the backward's: 2.5 x the
    forward's FLOPs) at the other head dims, with the peers that take them
    (a peer that refuses a head dim shows '-'); rows_regex picks rows by
    'BxHxSxD causal' or 'non-causal'."""
    print(f"\n## {'Backward' if backward else 'Forward'} TFLOP/s at other "
          f"head dims (BSHD, bf16; median of {rounds} interleaved rounds of "
          "back_to_back_ms)\n")
    names = ["flashcore", "cudnn", "flash2"] + (
        ["fa4"] if fa4_func is not None else [])
    print_header(["B x H x S x D", "causal"], names)
    for b, h, s, d in HEAD_DIM_ROWS:
        for causal in (False, True):
            key = f"{b}x{h}x{s}x{d} {'causal' if causal else 'non-causal'}"
            if rows_regex and not re.search(rows_regex, key):
                continue
            q, k, v = (torch.randn(b, s, h, d, device="cuda",
                                   dtype=torch.bfloat16) for _ in range(3))
            flops = (2.5 if backward else 1) * 4 * b * h * s * s * d / (
                2 if causal else 1)
            tflops_row(f"{b}x{h}x{s}x{d}", q, k, v, causal, flops, names,
                       rounds, backward)


# v's head dim apart from q's (B, H, S, D, Dv; bf16): DeepSeek's 192/128
# (MLA prefill's shapes without the latent projection) at 1k, 4k and 16k.
VALUE_HEAD_DIM_ROWS = [(16, 16, 1024, 192, 128), (4, 16, 4096, 192, 128),
                       (1, 16, 16384, 192, 128)]


def value_head_dim_rows(rounds, backward=False):
    """Forward TFLOP/s (or, with backward, the backward's) where v's head
    dim differs from q's, with the peers that take it (SDPA's cuDNN and
    memory-efficient backends, FA4; one that refuses shows '-'): 2 x B x H x
    S^2 x (D + Dv) FLOPs (2.5 times that backward), halved when causal."""
    print(f"\n## {'Backward' if backward else 'Forward'} TFLOP/s, v's head "
          f"dim apart from q's (BSHD, bf16; median of {rounds} interleaved "
          "rounds of back_to_back_ms)\n")
    names = ["flashcore", "cudnn", "efficient"] + (
        ["fa4"] if fa4_func is not None else [])
    print_header(["B x H x S x D/Dv", "causal"], names)
    for b, h, s, d, dv in VALUE_HEAD_DIM_ROWS:
        for causal in (False, True):
            q, k = (torch.randn(b, s, h, d, device="cuda",
                                dtype=torch.bfloat16) for _ in range(2))
            v = torch.randn(b, s, h, dv, device="cuda", dtype=torch.bfloat16)
            found = (backward_candidates(q, k, v, causal, with_flash2=False)
                     if backward else candidates(q, k, v, causal))
            flops = (2.5 if backward else 1) * 2 * b * h * s * s * (d + dv) / (
                2 if causal else 1)
            med = runnable_medians(found, names, flops, 1e9, rounds)
            print_row(f"{b}x{h}x{s}x{d}/{dv}", causal, names, med)
            del q, k, v, found
            torch.cuda.empty_cache()


# Shapes outside ANCHORS.md's grid (issue #25, item 3): (what, B, Sq, Sk, Hq,
# Hkv, D), bf16. GQA prefill as Llama 3 8B (32:8) and 70B (64:8) run it, and
# MQA; lengths one past or short of a block, and not a multiple of any;
# a chunk of new queries over a longer context (chunked prefill; causal is
# FlashAttention's bottom-right diagonal) and the converse; many short
# sequences; one long one.
SHAPE_ROWS = [
    ("gqa 32:8", 1, 8192, 8192, 32, 8, 128),
    ("gqa 64:8", 1, 8192, 8192, 64, 8, 128),
    ("gqa 32:8", 4, 4096, 4096, 32, 8, 128),
    ("mqa 16:1", 4, 4096, 4096, 16, 1, 128),
    ("mqa 16:1", 1, 8192, 8192, 16, 1, 128),
    ("mqa 16:1", 2, 2048, 2048, 16, 1, 128),
    ("gqa 32:4", 4, 4096, 4096, 32, 4, 64),
    ("odd", 4, 4097, 4097, 16, 16, 128),
    ("odd", 8, 1000, 1000, 16, 16, 128),
    ("odd", 32, 333, 333, 16, 16, 128),
    ("odd", 32, 333, 333, 32, 32, 64),
    ("odd", 16, 640, 640, 16, 16, 128),
    ("odd", 8, 1152, 1152, 16, 16, 128),
    ("odd", 4, 4095, 4095, 32, 32, 64),
    ("chunk", 4, 512, 8192, 32, 8, 128),
    ("chunk", 16, 128, 4096, 32, 8, 128),
    ("sq > sk", 4, 8192, 512, 16, 16, 128),
    ("short", 256, 128, 128, 16, 16, 128),
    ("short", 64, 512, 512, 16, 16, 128),
    ("short", 128, 256, 256, 32, 32, 64),
    ("long", 1, 32768, 32768, 16, 16, 128),
    ("long", 1, 32768, 32768, 32, 32, 64),
]


def attended_pairs(sq, sk, causal):
    """(query, key) pairs a head attends to: all of them, or under
    FlashAttention's bottom-right causal mask those with key <= query + Sk -
    Sq (S (S + 1) / 2 where Sq == Sk; the grid's rows count S^2 / 2)."""
    if not causal:
        return sq * sk
    return sum(min(sk, max(0, i + sk - sq + 1)) for i in range(sq))


def shape_rows(rows_regex, rounds, backward=False):
    """Forward TFLOP/s (or, with backward, the backward's: 2.5 x the
    forward's FLOPs) on SHAPE_ROWS, 4 x B x Hq x D FLOPs a pair that
    attended_pairs counts, with cuDNN and flash2 (SDPA with enable_gqa,
    where its mask is ours) and FA4; rows_regex picks rows by their label
    ('gqa 32:8 1x8192/8192x32/8x128 causal')."""
    print(f"\n## {'Backward' if backward else 'Forward'} TFLOP/s on shapes "
          "outside the grid (BSHD, bf16; median of "
          f"{rounds} interleaved rounds of back_to_back_ms)\n")
    names = ["flashcore", "cudnn", "flash2"] + (
        ["fa4"] if fa4_func is not None else [])
    print_header(["shape", "B x Sq/Sk x Hq/Hkv x D", "causal"], names)
    for what, b, sq, sk, hq, hkv, d in SHAPE_ROWS:
        for causal in (False, True):
            shape = f"{b}x{sq}/{sk}x{hq}/{hkv}x{d}"
            key = f"{what} {shape} {'causal' if causal else 'non-causal'}"
            if rows_regex and not re.search(rows_regex, key):
                continue
            q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, sk, hkv, d, device="cuda",
                                dtype=torch.bfloat16) for _ in range(2))
            flops = (2.5 if backward else 1) * 4 * b * hq * d * \
                attended_pairs(sq, sk, causal)
            tflops_row(f"{what} | {shape}", q, k, v, causal, flops, names,
                       rounds, backward)


# Softcap and sinks (B, Sq, Hq, Hkv, Sk, D; bf16): prefill rows, a GQA
# decode row and a batch-1 long-cache decode (split-KV).
FEATURE_ROWS = [(4, 4096, 16, 16, 4096, 128), (1, 16384, 16, 16, 16384, 128),
                (4, 4096, 32, 32, 4096, 64), (64, 1, 32, 8, 8192, 128),
                (1, 1, 64, 8, 65536, 128)]


def feature_rows(rows_regex, rounds):
    """Forward time with softcap=30 and with sinks beside the same kernels
    without them, flashcore and FA4 (its softcap and learnable_sink), cuDNN
    without either as the yardstick; TFLOP/s of the plain attention's
    FLOPs (decode: GB/s of q + k + v + o)."""
    print("\n## Softcap and sinks: forward (bf16, BSHD; median of "
          f"{rounds} interleaved rounds of back_to_back_ms)\n")
    names = ["flashcore", "flashcore softcap", "flashcore sinks", "cudnn"]
    if fa4_func is not None:
        names += ["fa4", "fa4 softcap", "fa4 sinks"]
    print("| B x Sq x Hq/Hkv x Sk x D | causal | unit | " + " | ".join(names)
          + " |\n|---|---|---|" + "---|" * len(names))
    for b, sq, hq, hkv, sk, d in FEATURE_ROWS:
        if rows_regex and not re.search(rows_regex,
                                        f"{b}x{sq}x{hq}/{hkv}x{sk}x{d}"):
            continue
        for causal in ((False, True) if sq > 1 else (True,)):
            q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, sk, hkv, d, device="cuda",
                                dtype=torch.bfloat16) for _ in range(2))
            sinks = torch.randn(hq, device="cuda")
            decode = sq == 1
            amount = (2 * q.numel() + k.numel() + v.numel()) * 2 if decode \
                else 4 * b * hq * sq * sk * d / (2 if causal else 1)
            qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
            found = {
                "flashcore": lambda: flashcore.attention(q, k, v,
                                                         causal=causal),
                "flashcore softcap": lambda: flashcore.attention(
                    q, k, v, causal=causal, softcap=30.0),
                "flashcore sinks": lambda: flashcore.attention(
                    q, k, v, causal=causal, sinks=sinks),
                "cudnn": (SDPBackend.CUDNN_ATTENTION,
                          lambda: F.scaled_dot_product_attention(
                              qt, kt, vt, is_causal=causal and not decode,
                              enable_gqa=hq != hkv)),
            }
            if fa4_func is not None:
                found["fa4"] = lambda: fa4_func(q, k, v, causal=causal)
                found["fa4 softcap"] = lambda: fa4_func(q, k, v, causal=causal,
                                                        softcap=30.0)
                found["fa4 sinks"] = lambda: fa4_func(q, k, v, causal=causal,
                                                      learnable_sink=sinks)
            # bytes / ms / 1e6 = GB/s; FLOPs / ms / 1e9 = TFLOP/s
            med = runnable_medians(found, names, amount,
                                   1e6 if decode else 1e9, rounds)
            print(f"| {b}x{sq}x{hq}/{hkv}x{sk}x{d} | "
                  f"{'yes' if causal else 'no'} | "
                  f"{'GB/s' if decode else 'TFLOP/s'} | " +
                  " | ".join(f"{med[n]:.0f}" if n in med else "-"
                             for n in names) + " |", flush=True)
            del q, k, v, found
            torch.cuda.empty_cache()


def backward_candidates(q, k, v, causal, with_flash2=True):
    """name -> a call that runs one backward (dq, dk, dv by autograd) of a
    forward made once, on [B, S, H, D] leaves (SDPA: their [B, H, S, D]
    transposes, its backend chosen at the forward)."""
    dout = q.new_empty(*q.shape[:-1], v.shape[-1]).normal_()
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]

    def backward_of(out):
        return lambda: torch.autograd.grad(out, leaves, dout,
                                           retain_graph=True)

    def sdpa(backend):
        if not sdpa_masks_alike(q, k, causal):
            raise ValueError("SDPA's causal mask is top-left aligned, "
                             "flashcore's bottom-right: Sq != Sk differs")
        qt, kt, vt = (t.transpose(1, 2) for t in leaves)
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(
                qt, kt, vt, is_causal=causal,
                enable_gqa=q.shape[2] != k.shape[2])
        return backward_of(out.transpose(1, 2))
    def attempt(make):
        # A peer that refuses the input at its forward: a call that raises
        # the refusal, which runnable_medians reports and leaves out.
        try:
            return make()
        except Exception as e:  # noqa: BLE001 - reported where timed
            def refused(error=e):
                raise error
            return refused

    def fa4_backward():
        out = fa4_func(*leaves, causal=causal)
        return backward_of(out[0] if isinstance(out, tuple) else out)
    found = {
        "flashcore": attempt(lambda: backward_of(
            flashcore.attention(*leaves, causal=causal))),
        "cudnn": attempt(lambda: sdpa(SDPBackend.CUDNN_ATTENTION)),
    }
    # SDPA's flash backend takes one head dim for q, k and v; its
    # memory-efficient one takes v's apart.
    if with_flash2:
        found["flash2"] = attempt(lambda: sdpa(SDPBackend.FLASH_ATTENTION))
    else:
        found["efficient"] = attempt(
            lambda: sdpa(SDPBackend.EFFICIENT_ATTENTION))
    if fa4_func is not None:
        found["fa4"] = attempt(fa4_backward)
    return found


def backward_rows(rows_regex, rounds):
    print("\n## Backward TFLOP/s on the ANCHORS rows (BSHD, 2.5 x the "
          f"forward's FLOPs; median of {rounds} interleaved rounds of "
          "back_to_back_ms)\n")
    names = ["flashcore", "cudnn", "flash2"] + (
        ["fa4"] if fa4_func is not None else [])
    print_header(["B x H x S x D", "causal", "dtype"], names)
    for b, h, s, d, causal, dtype in ATTENTION_GRID:
        key = f"{b}x{h}x{s}x{d} {'causal' if causal else 'non-causal'}"
        if rows_regex and not re.search(rows_regex, key):
            continue
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dtype)
                   for _ in range(3))
        flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
        found = backward_candidates(q, k, v, causal)
        per = {name: [] for name in names}
        for round_ in range(rounds):
            for name in rotated(names, round_):
                ms = back_to_back_ms(found[name])
                per[name].append(flops / ms / 1e9)
        med = {name: statistics.median(per[name]) for name in names}
        best = max(med[n] for n in names if n != "flashcore")
        print(f"| {b}x{h}x{s}x{d} | {'yes' if causal else 'no'} | "
              f"{'fp16' if dtype == torch.float16 else 'bf16'} | " +
              " | ".join(f"{med[n]:.0f}" for n in names) +
              f" | {med['flashcore'] / best:.2f} |", flush=True)
        del q, k, v, found
        torch.cuda.empty_cache()


# Softcap's backward (B, H, S, D; bf16): Gemma 2's cap of 50.
SOFTCAP_BACKWARD_ROWS = [(4, 16, 4096, 128), (4, 32, 4096, 64),
                         (16, 16, 1024, 128)]


def softcap_backward_rows(rounds):
    """Backward TFLOP/s with softcap=50 beside the same backward without
    it, flashcore and FA4 (its softcap), 2.5 x the forward's FLOPs; a peer
    that refuses shows '-'."""
    print("\n## Backward with softcap 50 (BSHD, bf16; median of "
          f"{rounds} interleaved rounds of back_to_back_ms)\n")
    names = ["flashcore", "flashcore softcap"] + (
        ["fa4", "fa4 softcap"] if fa4_func is not None else [])
    print("| B x H x S x D | causal | " + " | ".join(names) +
          " |\n|---|---|" + "---|" * len(names))
    for b, h, s, d in SOFTCAP_BACKWARD_ROWS:
        for causal in (False, True):
            q, k, v = (torch.randn(b, s, h, d, device="cuda",
                                   dtype=torch.bfloat16) for _ in range(3))
            dout = torch.randn_like(q)
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]

            def backward_of(out):
                out = out[0] if isinstance(out, tuple) else out
                return lambda: torch.autograd.grad(out, leaves, dout,
                                                   retain_graph=True)
            found = {}
            for name, call in [
                ("flashcore", lambda: flashcore.attention(*leaves,
                                                          causal=causal)),
                ("flashcore softcap", lambda: flashcore.attention(
                    *leaves, causal=causal, softcap=50.0)),
                ("fa4", lambda: fa4_func(*leaves, causal=causal)),
                ("fa4 softcap", lambda: fa4_func(*leaves, causal=causal,
                                                 softcap=50.0)),
            ]:
                if name not in names:
                    continue
                try:
                    found[name] = backward_of(call())
                except Exception as e:  # noqa: BLE001 - report, go on
                    print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
            flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
            med = runnable_medians(found, [n for n in names if n in found],
                                   flops, 1e9, rounds)
            print_row(f"{b}x{h}x{s}x{d}", causal, names, med, ratio=False)
            del q, k, v, dout, leaves, found
            torch.cuda.empty_cache()


# B, Sq, Hq, Hkv, Sk (d128 bf16): ANCHORS.md's decode rows, then one long
# sequence, GQA 64:8, and a few query tokens (speculative decoding).
DECODE_ROWS = [
    (64, 1, 32, 8, 8192), (128, 1, 32, 8, 2048), (16, 1, 32, 32, 4096),
    (1, 1, 32, 8, 65536), (1, 1, 32, 8, 131072), (8, 1, 64, 8, 8192),
    (64, 4, 32, 8, 8192), (1, 4, 32, 8, 65536), (32, 16, 64, 8, 4096),
]


def decode_candidates(q, k, v):
    """name -> a call on [B, S, H, D] tensors; every candidate non-causal."""
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def sdpa():
        return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
    found = {
        "flashcore": lambda: flashcore.attention(q, k, v),
        "cudnn": (SDPBackend.CUDNN_ATTENTION, sdpa),
        "flash2": (SDPBackend.FLASH_ATTENTION, sdpa),
    }
    if fa4_func is not None:
        found["fa4"] = lambda: fa4_func(q, k, v)
    return found


def decode_rows(rounds):
    print("\n## Decode GB/s (q + k + v + o bytes over the time; d128 bf16, "
          f"non-causal, median of {rounds} interleaved rounds of "
          "back_to_back_ms; copy: a device-to-device copy that reads and "
          "writes as many bytes, the HBM ceiling in the same rounds)\n")
    peers = ["cudnn", "flash2"] + (["fa4"] if fa4_func is not None else [])
    names = ["flashcore"] + peers + ["copy"]
    print("| B x Sq x Hq/Hkv x Sk | MB | " + " | ".join(names) +
          " | flashcore / best | flashcore / copy |\n|" +
          "---|" * (len(names) + 4))
    d = 128
    for b, sq, hq, hkv, sk in DECODE_ROWS:
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        nbytes = 2 * (2 * q.numel() + 2 * k.numel())
        found = decode_candidates(q, k, v)
        source = torch.randn(nbytes // 4, device="cuda", dtype=torch.bfloat16)
        target = torch.empty_like(source)
        found["copy"] = lambda: target.copy_(source)
        usable = []
        for name in names:  # a backend that refuses the shape is n/a
            try:
                timed(found[name], lambda fn: fn())
                usable.append(name)
            except Exception as e:  # noqa: BLE001
                print(f"{name} refuses {b}x{sq}x{hq}/{hkv}x{sk}: "
                      f"{type(e).__name__}: {str(e)[:120]}", file=sys.stderr)
        per = {name: [] for name in usable}
        for round_ in range(rounds):
            for name in rotated(usable, round_):
                ms = timed(found[name], back_to_back_ms)
                per[name].append(nbytes / ms / 1e6)
        med = {name: statistics.median(per[name]) for name in usable}
        best = max((med[n] for n in peers if n in med), default=0)
        print(f"| {b}x{sq}x{hq}/{hkv}x{sk} | {nbytes / 1e6:.0f} | " +
              " | ".join(f"{med[n]:.0f}" if n in med else "n/a"
                         for n in names) +
              f" | {med['flashcore'] / best if best else 0:.2f}"
              f" | {med['flashcore'] / med['copy']:.2f} |", flush=True)
        del q, k, v, found, source, target
        torch.cuda.empty_cache()


# Decode over KV caches (B, Hq, Hkv, cache length): filled to the end, or
# to lengths drawn uniformly from [1, cache length] (ragged).
KVCACHE_ROWS = [(64, 32, 8, 8192), (128, 32, 8, 2048), (1, 32, 8, 65536)]


PAGE_SIZES = (16, 256)


def paged_caches(k, v, page_size):
    """k and v [B, S, H, D] as pools of page_size-row pages in a shuffled
    order, and the page table [B, S / page_size] int32 that finds them."""
    b, s, h, d = k.shape
    order = torch.randperm(b * s // page_size, device=k.device)
    pools = tuple(t.reshape(-1, page_size, h, d)[order] for t in (k, v))
    table = torch.argsort(order).to(torch.int32).view(b, s // page_size)
    return (*pools, table)


def kvcache_rows(rounds):
    print("\n## Decode over a KV cache, GB/s (q + o and the k, v bytes of the "
          "keys each sequence attends to, over the time; d128 bf16, one "
          f"query, median of {rounds} interleaved rounds of back_to_back_ms). "
          "flashcore with cache_seqlens; the dense calls read whole caches "
          "(filled rows only)\n")
    names = ["flashcore kvcache"] + [
        f"flashcore paged {p}" for p in PAGE_SIZES] + [
        "flashcore dense", "cudnn dense"] + (
        ["fa4 seqused_k"] + [f"fa4 paged {p}" for p in PAGE_SIZES]
        if fa4_varlen_func is not None else [])
    print("| B x Hq/Hkv x cache | filled | MB | " + " | ".join(names) +
          " |\n|---|---|---|" + "---|" * len(names))
    d = 128
    for b, hq, hkv, cache in KVCACHE_ROWS:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, cache, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        paged = {p: paged_caches(k, v, p) for p in PAGE_SIZES}
        for filled in ("full", "ragged"):
            lengths = torch.full((b,), cache, dtype=torch.int32,
                                 device="cuda") if filled == "full" else \
                torch.randint(1, cache + 1, (b,), dtype=torch.int32,
                              device="cuda")
            keys = int(lengths.sum())
            nbytes = 2 * (2 * q.numel() + 2 * keys * hkv * d)
            qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
            found = {
                "flashcore kvcache": lambda: flashcore.attention_with_kvcache(
                    q, k, v, lengths),
                "flashcore dense": lambda: flashcore.attention(q, k, v),
                "cudnn dense": (SDPBackend.CUDNN_ATTENTION,
                                lambda: F.scaled_dot_product_attention(
                                    qt, kt, vt, enable_gqa=True)),
            }
            for p, (pk, pv, table) in paged.items():
                found[f"flashcore paged {p}"] = (
                    lambda pk=pk, pv=pv, table=table:
                    flashcore.attention_with_kvcache(q, pk, pv, lengths,
                                                     page_table=table))
            if fa4_varlen_func is not None:
                found["fa4 seqused_k"] = lambda: fa4_varlen_func(
                    q, k, v, seqused_k=lengths)
                for p, (pk, pv, table) in paged.items():
                    found[f"fa4 paged {p}"] = (
                        lambda pk=pk, pv=pv, table=table: fa4_varlen_func(
                            q, pk, pv, seqused_k=lengths, page_table=table))
            # The dense calls only where the caches are full: the same bytes.
            chosen = [n for n in names
                      if filled == "full" or "dense" not in n]
            med = runnable_medians(found, chosen, nbytes, 1e6, rounds)
            print(f"| {b}x{hq}/{hkv}x{cache} | {filled} | {nbytes / 1e6:.0f} "
                  "| " + " | ".join(f"{med[n]:.0f}" if n in med else "n/a"
                                    for n in names) + " |", flush=True)
        del q, k, v, paged
        torch.cuda.empty_cache()


# Prefill over a paged cache (B, Hq, Hkv, S, causal): the same tokens as
# the dense call, its keys in shuffled pages.
PAGED_PREFILL_ROWS = [(4, 32, 8, 4096, True), (4, 32, 8, 4096, False)]


def paged_prefill_rows(rounds):
    print("\n## Prefill over a paged KV cache, TFLOP/s (d128 bf16, Sq = Sk, "
          f"median of {rounds} interleaved rounds of back_to_back_ms): the "
          "dense call beside the same keys in shuffled pages\n")
    names = ["flashcore dense"] + [f"flashcore paged {p}" for p in PAGE_SIZES]
    if fa4_func is not None:
        names += ["fa4 dense"] + [f"fa4 paged {p}" for p in PAGE_SIZES]
    print("| B x Hq/Hkv x S | causal | " + " | ".join(names) +
          " |\n|---|---|" + "---|" * len(names))
    d = 128
    for b, hq, hkv, seq, causal in PAGED_PREFILL_ROWS:
        q = torch.randn(b, seq, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, seq, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        lengths = torch.full((b,), seq, dtype=torch.int32, device="cuda")
        found = {"flashcore dense": lambda: flashcore.attention(
            q, k, v, causal=causal)}
        if fa4_func is not None:
            found["fa4 dense"] = lambda: fa4_func(q, k, v, causal=causal)
        for p in PAGE_SIZES:
            pk, pv, table = paged_caches(k, v, p)
            found[f"flashcore paged {p}"] = (
                lambda pk=pk, pv=pv, table=table:
                flashcore.attention_with_kvcache(q, pk, pv, page_table=table,
                                                 causal=causal))
            if fa4_varlen_func is not None:
                found[f"fa4 paged {p}"] = (
                    lambda pk=pk, pv=pv, table=table: fa4_varlen_func(
                        q, pk, pv, seqused_k=lengths, page_table=table,
                        causal=causal))
        flops = 4 * b * hq * seq * seq * d / (2 if causal else 1)
        med = runnable_medians(found, names, flops, 1e9, rounds)
        print(f"| {b}x{hq}/{hkv}x{seq} | {causal} | " + " | ".join(
            f"{med[n]:.0f}" if n in med else "n/a" for n in names) + " |",
            flush=True)
        del q, k, v, found
        torch.cuda.empty_cache()


# Packed (varlen) prefill, d128 bf16, GQA 32:8: the sequence lengths of
# each row (one length: the same tokens as a dense [B, S] call).
VARLEN_ROWS = [[4096] * 4, [1024] * 16,
               [4096, 1024, 2048, 512, 3000, 100, 7000, 1500],
               [300, 17, 1200, 64, 900, 2500, 33, 700] * 4]


def varlen_rows(rounds):
    print("\n## Packed sequences (attention_varlen), TFLOP/s (d128 bf16, GQA "
          f"32:8, Sq = Sk per sequence, median of {rounds} interleaved rounds "
          "of back_to_back_ms): FLOPs of the sequences' own attention; one "
          "length: beside the dense call on the same tokens\n")
    names = ["flashcore varlen", "flashcore dense"]
    if fa4_func is not None:
        names += ["fa4 varlen", "fa4 dense"]
    print("| sequences (tokens) | causal | " + " | ".join(names) +
          " |\n|---|---|" + "---|" * len(names))
    hq, hkv, d = 32, 8, 128
    for lengths in VARLEN_ROWS:
        total = sum(lengths)
        q = torch.randn(total, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(total, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                          dtype=torch.int32, device="cuda")
        longest = max(lengths)
        uniform = len(set(lengths)) == 1
        for causal in (False, True):
            found = {"flashcore varlen": lambda: flashcore.attention_varlen(
                q, k, v, cu, cu, longest, longest, causal=causal)}
            if uniform:
                shape = (len(lengths), longest)
                qd, kd, vd = (t.view(*shape, *t.shape[1:]) for t in (q, k, v))
                found["flashcore dense"] = lambda: flashcore.attention(
                    qd, kd, vd, causal=causal)
            if fa4_varlen_func is not None:
                found["fa4 varlen"] = lambda: fa4_varlen_func(
                    q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu,
                    max_seqlen_q=longest, max_seqlen_k=longest,
                    causal=causal)
                if uniform:
                    found["fa4 dense"] = lambda: fa4_func(qd, kd, vd,
                                                          causal=causal)
            flops = sum(4 * hq * n * n * d / (2 if causal else 1)
                        for n in lengths)
            med = runnable_medians(found, [n for n in names if n in found],
                                   flops, 1e9, rounds)
            label = (f"{len(lengths)} x {longest}" if uniform else
                     f"{len(lengths)} mixed {min(lengths)}-{longest}")
            print(f"| {label} ({total}) | {causal} | " + " | ".join(
                f"{med[n]:.0f}" if n in med else "n/a" for n in names) + " |",
                flush=True)
        del q, k, v
        torch.cuda.empty_cache()


# Decode of packed sequences (B, cache length), one query each, d128 bf16,
# GQA 32:8: as serving engines batch decode.
VARLEN_DECODE_ROWS = [(64, 8192), (128, 2048), (8, 8192), (4, 32768),
                      (1, 65536), (1, 131072)]


def varlen_decode_rows(rounds):
    print("\n## Decode of packed sequences (attention_varlen, one query per "
          "sequence), GB/s (q + k + v + o bytes over the time; d128 bf16, "
          f"GQA 32:8, median of {rounds} interleaved rounds of "
          "back_to_back_ms); beside the dense decode call on the same "
          "cache\n")
    names = ["flashcore varlen", "flashcore varlen no max_k",
             "flashcore dense", "cudnn", "flash2"]
    if fa4_varlen_func is not None:
        names.append("fa4 varlen")
    print_header(["B x Sk", "MB"], names)
    hq, hkv, d = 32, 8, 128
    for b, sk in VARLEN_DECODE_ROWS:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        nbytes = 2 * (2 * q.numel() + 2 * k.numel())
        cu_q = torch.arange(b + 1, device="cuda", dtype=torch.int32)
        cu_k = cu_q * sk
        qp, kp, vp = (t.flatten(0, 1) for t in (q, k, v))
        found = decode_candidates(q, k, v)
        found = {
            "flashcore varlen": lambda: flashcore.attention_varlen(
                qp, kp, vp, cu_q, cu_k, 1, sk),
            "flashcore varlen no max_k": lambda: flashcore.attention_varlen(
                qp, kp, vp, cu_q, cu_k, 1),
            "flashcore dense": found["flashcore"],
            "cudnn": found["cudnn"],
            "flash2": found["flash2"],
        }
        if fa4_varlen_func is not None:
            found["fa4 varlen"] = lambda: fa4_varlen_func(
                qp, kp, vp, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                max_seqlen_q=1, max_seqlen_k=sk)
        med = runnable_medians(found, names, nbytes, 1e6, rounds)
        peers = [med[n] for n in ("cudnn", "flash2", "fa4 varlen")
                 if n in med]
        best = max(peers, default=0)
        print(f"| {b}x{sk} | {nbytes / 1e6:.0f} | " + " | ".join(
            f"{med[n]:.0f}" if n in med else "n/a" for n in names) +
            f" | {med['flashcore varlen'] / best if best else 0:.2f} |",
            flush=True)
        del q, k, v, qp, kp, vp, found
        torch.cuda.empty_cache()


def backward_host_cost(rounds, calls):
    """Host cost per backward (us), on the host-cost problem, of flashcore
    and the peers (autograd.grad from one retained forward), then where
    flashcore's goes: its op through the dispatcher, and the op's
    implementation called alone. Last, whether a backward waits for the
    GPU: the host time of one call queued behind ~25 ms of GPU work (a call
    that synchronizes returns after it)."""
    b, s, h, d = 1, 128, 8, 64
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    found = backward_candidates(q, k, v, False)
    names = list(found)
    times = {name: [] for name in names}
    for fn in found.values():
        host_us(fn, 20)
    for round_ in range(rounds):
        for name in rotated(names, round_):
            times[name].append(host_us(found[name], calls))
    print(f"\n## Host cost per backward, B={b} S={s} H={h} D={d} bf16 "
          f"non-causal ({calls} calls x {rounds} rounds, median)\n")
    print("| candidate | us per backward | rounds (min-max) |\n|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {statistics.median(values):.1f} | "
              f"{min(values):.1f}-{max(values):.1f} |")
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    o, lse = flashcore.attention(*leaves, return_lse=True)
    o, lse, dout = o.detach(), lse.detach(), torch.randn_like(q)
    steps = {
        "torch.ops.flashcore.attention_backward":
            lambda: torch.ops.flashcore.attention_backward.default(
                dout, q, k, v, o, lse, False, None, None, 0.0, False),
        "_attention_backward_impl": lambda: _ops._attention_backward_impl(
            dout, q, k, v, o, lse),
    }
    print("\n| flashcore step | us per call |\n|---|---|")
    for name, fn in steps.items():
        host_us(fn, 20)
        print(f"| {name} | "
              f"{statistics.median(host_us(fn, calls) for _ in range(5)):.1f} |")
    print("\n| candidate | ms to return behind ~25 ms of GPU work |\n|---|---|")
    for name, fn in found.items():
        torch.cuda.synchronize()
        torch.cuda._sleep(50_000_000)
        start = time.perf_counter()
        timed(fn, lambda call: call())
        print(f"| {name} | {(time.perf_counter() - start) * 1e3:.2f} |")
        torch.cuda.synchronize()


def breakdown(calls):
    """Host cost of each step of flashcore.attention on the host-cost problem
    (us per call, one step repeated alone): where the Python time goes."""
    q, k, v = (torch.randn(1, 128, 8, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    o = torch.empty_like(q)
    steps = {
        "_direct": lambda: _ops._direct((q, k, v)),
        "_check_attention": lambda: _ops._check_attention(q, k, v, None),
        "torch.empty_like": lambda: torch.empty_like(q),
        "capturing?": lambda: _ops._capturing(),
        "raw stream": lambda: _ops._raw_stream(0),
        "_pack_attention": lambda: _ops._pack_attention(
            q, k, v, (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                      0), o.stride(), False, None, None, 0.0),
        "_fill_attention_desc": lambda: _ops._fill_attention_desc(
            q, k, v, o.data_ptr(), 0, False, None, None, 0.0, None),
        "_run_attention (fill + C)": lambda: _ops._run_attention(
            q, k, v, o.data_ptr(), 0, False, None, None, 0.0, None, 0),
        "C API, prebuilt": c_api_call(q, k, v, False),
        "flashcore.attention": lambda: flashcore.attention(q, k, v),
    }
    print(f"\n## Where flashcore.attention's host time goes ({calls} calls "
          "per step, median of 5)\n\n| step | us per call |\n|---|---|")
    for name, fn in steps.items():
        host_us(fn, 20)
        print(f"| {name} | "
              f"{statistics.median(host_us(fn, calls) for _ in range(5)):.2f} |")


def main():
    global settle_ms
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--settle-ms", type=float, default=settle_ms)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rows", default="")
    parser.add_argument("--no-tflops", action="store_true")
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--decode", action="store_true")
    parser.add_argument("--kvcache", action="store_true")
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--no-host", action="store_true")
    parser.add_argument("--head-dims", action="store_true")
    parser.add_argument("--features", action="store_true")
    parser.add_argument("--varlen", action="store_true")
    parser.add_argument("--varlen-decode", action="store_true")
    parser.add_argument("--value-head-dims", action="store_true")
    parser.add_argument("--softcap-backward", action="store_true")
    parser.add_argument("--head-dims-backward", action="store_true")
    parser.add_argument("--value-head-dims-backward", action="store_true")
    parser.add_argument("--backward-host", action="store_true")
    parser.add_argument("--shapes", action="store_true")
    parser.add_argument("--shapes-backward", action="store_true")
    args = parser.parse_args()
    settle_ms = args.settle_ms
    print(f"# flashcore {flashcore.version()} on "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{datetime.date.today()}, settle {settle_ms:g} ms")
    if args.breakdown:
        breakdown(args.calls)
    if args.backward_host:
        backward_host_cost(args.rounds, args.calls)
    if not args.no_host:
        host_cost(args.rounds, args.calls)
    if not args.no_tflops:
        tflops_rows(args.rows, args.rounds)
    if args.backward:
        backward_rows(args.rows, args.rounds)
    if args.decode:
        decode_rows(args.rounds)
    if args.kvcache:
        kvcache_rows(args.rounds)
        paged_prefill_rows(args.rounds)
    if args.head_dims:
        head_dim_rows(args.rows, args.rounds)
    if args.features:
        feature_rows(args.rows, args.rounds)
    if args.varlen:
        varlen_rows(args.rounds)
    if args.varlen_decode:
        varlen_decode_rows(args.rounds)
    if args.value_head_dims:
        value_head_dim_rows(args.rounds)
    if args.softcap_backward:
        softcap_backward_rows(args.rounds)
    if args.head_dims_backward:
        head_dim_rows(args.rows, args.rounds, backward=True)
    if args.value_head_dims_backward:
        value_head_dim_rows(args.rounds, backward=True)
    if args.shapes:
        shape_rows(args.rows, args.rounds)
    if args.shapes_backward:
        shape_rows(args.rows, args.rounds, backward=True)


if __name__ == "__main__":
    main()
