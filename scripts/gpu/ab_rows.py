"""TFLOP/s of the installed flashcore's forward or backward on a few rows,
for an A/B of two wheels (scripts/gpu/ab.sh runs it once per wheel,
alternating; AB=forward picks the forward, AB=grid the forward on the bf16
rows of ../shared/ANCHORS.md's forward table, AB=short the forward on short
queries, AB=pairs the causal forward where the row blocks are odd in count,
AB=groups the backward under GQA and MQA (and MHA controls),
AB=decode the GB/s of
decode rows, one query and a few, and of decode over KV caches, AB=varlen
attention_varlen's TFLOP/s beside the dense call's and paged prefill's).

Each row: random bf16 BSHD inputs (seed 0), CUDA events around back-to-back
calls (bench.py's back_to_back_ms), the median of 7 rounds. The forward:
flashcore.attention, 10 calls a round, 4 B H S^2 D FLOPs; its rows are
bench.py's --head-dims shapes (4 x 2048/D heads x 4096) at the head dims
whose tiles are wider than D, and d64/d128 controls. The backward: dq, dk
and dv by autograd from one retained forward, 5 calls a round, 2.5 x the
forward's FLOPs. Both halved when causal; a sixth entry in a row is v's
head dim, which counts as 2 B H S^2 (D + Dv), a seventh k's and v's heads
(H of q's). Prints "BxH[/Hkv]xSxD[/Dv][c] TFLOP/s" per row.

Usage (GPU machine): python3 scripts/gpu/ab_rows.py forward|grid|short|pairs|backward|groups|decode|varlen BENCH_DIR
(BENCH_DIR: the repository's bench/python, for back_to_back_ms; AB_ROWS, a
regular expression, keeps the forward and backward rows whose names it
finds, e.g. AB_ROWS='x(224|256)' or 'x256c$')
"""

import os
import re
import sys

import torch

import flashcore

ROWS = {
    "forward": [(4, 25, 4096, 80, False), (4, 25, 4096, 80, True),
                (4, 21, 4096, 96, False), (4, 21, 4096, 96, True),
                (4, 28, 4096, 72, False), (4, 18, 4096, 112, False),
                (4, 42, 4096, 48, False), (4, 12, 4096, 160, False),
                (4, 9, 4096, 224, False), (4, 9, 4096, 224, True),
                (4, 32, 4096, 64, False), (4, 16, 4096, 128, False)],
    "grid": [(b, h, s, d, causal)
             for h, d in ((32, 64), (16, 128), (8, 256))
             for b, s in ((16, 1024), (4, 4096), (1, 16384))
             for causal in (False, True)],
    # Short queries at d64 (the 128-row tile up to 256, 192 past it) with
    # a causal and a d128 control.
    "short": [(256, 32, 128, 64, False), (160, 32, 200, 64, False),
              (128, 32, 256, 64, False), (127, 32, 257, 64, False),
              (64, 32, 512, 64, False), (16, 32, 1024, 64, False),
              (128, 32, 256, 64, True), (64, 16, 256, 128, False)],
    # Causal rows whose count of row blocks is odd (333, 640, 896 and 4097
    # queries at 128 rows: 3, 5, 7 and 33), whose middle row blocks are
    # units alone, and even controls (1152: 9 blocks, whose units the
    # grid's 132 CTAs never aliased; 1000, 1024, 4096; non-causal).
    "pairs": [(32, 16, 333, 128, True), (32, 32, 333, 64, True),
              (16, 16, 640, 128, True), (8, 16, 896, 128, True),
              (4, 16, 4097, 128, True), (8, 16, 1152, 128, True),
              (16, 16, 1000, 128, True), (16, 16, 1024, 128, True),
              (4, 16, 4096, 128, True), (32, 16, 333, 128, False)],
    "backward": [(16, 16, 1024, 128, False), (16, 16, 1024, 128, True),
                 (16, 32, 1024, 64, False), (16, 32, 1024, 64, True),
                 (4, 16, 4096, 128, False), (4, 16, 4096, 128, True),
                 (4, 32, 4096, 64, True), (16, 8, 1024, 256, True),
                 (1, 16, 16384, 128, True), (4, 8, 4096, 256, True),
                 (8, 16, 2048, 128, True),
                 (2, 16, 4096, 256, False), (4, 64, 4096, 32, False),
                 (4, 25, 4096, 80, False), (4, 21, 4096, 96, False),
                 (4, 21, 4096, 96, True), (4, 12, 4096, 160, False),
                 (4, 10, 4096, 192, False), (4, 10, 4096, 192, True),
                 (4, 9, 4096, 224, False), (4, 9, 4096, 224, True),
                 (4, 16, 4096, 192, False, 128),
                 (4, 16, 4096, 192, True, 128),
                 # Short rows, where a CTA's prologue and epilogue are a
                 # large part of it (backward-notes v57).
                 (128, 32, 256, 64, False), (32, 32, 333, 64, True),
                 (64, 16, 256, 128, False)],
    # bench.py's --shapes-backward GQA and MQA rows (d128, d64's 32:4),
    # causal MHA rows whose CTA order is the GQA rows', and GQA at d256.
    "groups": [(1, 32, 8192, 128, causal, 128, 8) for causal in (True, False)]
              + [(1, 64, 8192, 128, True, 128, 8),
                 (4, 32, 4096, 128, True, 128, 8),
                 (4, 16, 4096, 128, True, 128, 1),
                 (1, 16, 8192, 128, True, 128, 1),
                 (2, 16, 2048, 128, True, 128, 1),
                 (4, 32, 4096, 64, True, 64, 4),
                 (4, 16, 4096, 128, True), (16, 16, 1024, 128, True),
                 (8, 16, 2048, 128, True), (1, 16, 16384, 128, True),
                 (4, 16, 4097, 128, True), (8, 16, 1000, 128, True),
                 (16, 32, 1024, 64, True), (4, 32, 4096, 64, True),
                 (1, 32, 16384, 64, True),
                 (4, 16, 4096, 256, True, 256, 8),
                 (2, 32, 4096, 256, True, 256, 8)],
}


# Decode, B, Sq, Hq, Hkv, Sk, D[, Dv]: bench.py's one-query decode rows
# (d128), the 8k GQA rows at the other head dims' decode tiles (DeepSeek's
# 192/128 among them), and a few queries (speculative decoding, causal)
# whose packed rows fill one decode tile.
DECODE_ROWS = [(64, 1, 32, 8, 8192, 128), (128, 1, 32, 8, 2048, 128),
               (16, 1, 32, 32, 4096, 128), (1, 1, 32, 8, 65536, 128),
               (1, 1, 32, 8, 131072, 128), (8, 1, 64, 8, 8192, 128),
               (64, 1, 32, 8, 8192, 64), (8, 1, 64, 8, 8192, 64),
               (64, 1, 32, 8, 8192, 32), (64, 1, 32, 8, 8192, 256),
               (8, 1, 64, 8, 8192, 256), (64, 1, 32, 8, 8192, 96),
               (64, 1, 32, 8, 8192, 192), (64, 1, 32, 8, 8192, 192, 128),
               (64, 4, 32, 8, 8192, 128),
               (64, 4, 32, 8, 8192, 64), (8, 4, 64, 8, 8192, 256),
               (16, 16, 32, 8, 4096, 128), (16, 64, 32, 32, 4096, 64)]


def decode(back_to_back_ms, paged_caches, kvcache_rows):
    """GB/s of q + k + v + o (BSHD bf16; a few queries causal) per row, then
    of q + o and the keys attended per row of bench.py's KVCACHE_ROWS (B,
    Hq, Hkv, cache length; d128, one query), with cache_seqlens full or
    ragged (uniform in [1, cache length], seed 0), contiguous or in
    shuffled pages of 16 rows."""
    for b, sq, hq, hkv, sk, d, *rest in DECODE_ROWS:
        dv = rest[0] if rest else d
        torch.manual_seed(0)
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, sk, hkv, width, device="cuda",
                            dtype=torch.bfloat16) for width in (d, dv))
        ms = back_to_back_ms(
            lambda: flashcore.attention(q, k, v, causal=sq > 1),
            calls=20, rounds=7)
        nbytes = 2 * (q.numel() + b * sq * hq * dv + k.numel() + v.numel())
        print(f"{b}x{sq}x{hq}/{hkv}x{sk}x{d}{f'/{dv}' if dv != d else ''} "
              f"{nbytes / ms / 1e6:.1f}", flush=True)
        del q, k, v
    d = 128
    for b, hq, hkv, cache in kvcache_rows:
        torch.manual_seed(0)
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, cache, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        pk, pv, table = paged_caches(k, v, 16)
        for filled in ("full", "ragged"):
            lengths = torch.full((b,), cache, dtype=torch.int32,
                                 device="cuda") if filled == "full" else \
                torch.randint(1, cache + 1, (b,), dtype=torch.int32,
                              device="cuda")
            nbytes = 2 * (2 * q.numel() + 2 * int(lengths.sum()) * hkv * d)
            for layout, args in (("contiguous", (k, v)),
                                 ("paged16", (pk, pv))):
                table_or_none = table if layout == "paged16" else None
                ms = back_to_back_ms(
                    lambda: flashcore.attention_with_kvcache(
                        q, *args, lengths, page_table=table_or_none),
                    calls=20, rounds=7)
                print(f"kvcache-{layout}-{filled}-{b}x{hq}/{hkv}x{cache} "
                      f"{nbytes / ms / 1e6:.1f}", flush=True)
        del q, k, v, pk, pv


def varlen(back_to_back_ms, varlen_rows, paged_caches, page_sizes):
    """TFLOP/s of attention_varlen on bench.py's VARLEN_ROWS (packed
    sequences, d128 bf16, GQA 32:8, Sq = Sk per sequence, causal or not),
    and where every length is one, of the dense call on the same tokens
    (the varlen / dense ratio of each wheel, and a control) and of
    attention_with_kvcache over the same keys in shuffled pages of
    bench.py's PAGE_SIZES (paged prefill)."""
    hq, hkv, d = 32, 8, 128
    for lengths in varlen_rows:
        torch.manual_seed(0)
        total, longest = sum(lengths), max(lengths)
        q = torch.randn(total, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(total, hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                          dtype=torch.int32, device="cuda")
        uniform = len(set(lengths)) == 1
        label = (f"{len(lengths)}x{longest}" if uniform else
                 f"{len(lengths)}mixed{min(lengths)}-{longest}")
        for causal in (False, True):
            calls = {"varlen": lambda: flashcore.attention_varlen(
                q, k, v, cu, cu, longest, longest, causal=causal)}
            if uniform:
                dense = [t.view(len(lengths), longest, *t.shape[1:])
                         for t in (q, k, v)]
                calls["dense"] = lambda: flashcore.attention(*dense,
                                                             causal=causal)
                for page_size in page_sizes:
                    pk, pv, table = paged_caches(*dense[1:], page_size)
                    calls[f"paged{page_size}"] = (
                        lambda pk=pk, pv=pv, table=table:
                        flashcore.attention_with_kvcache(
                            dense[0], pk, pv, page_table=table,
                            causal=causal))
            flops = sum(4 * hq * n * n * d / (2 if causal else 1)
                        for n in lengths)
            for name, call in calls.items():
                ms = back_to_back_ms(call, calls=10, rounds=7)
                print(f"{name}-{label}{'c' if causal else ''} "
                      f"{flops / ms / 1e9:.1f}", flush=True)
        del q, k, v


def main():
    mode = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    from bench import (KVCACHE_ROWS, PAGE_SIZES, VARLEN_ROWS,
                       back_to_back_ms, paged_caches)
    if mode == "decode":
        decode(back_to_back_ms, paged_caches, KVCACHE_ROWS)
        return
    if mode == "varlen":
        varlen(back_to_back_ms, VARLEN_ROWS, paged_caches, PAGE_SIZES)
        return
    only = re.compile(os.environ.get("AB_ROWS", ""))
    backward = mode in ("backward", "groups")
    for b, h, s, d, causal, *rest in ROWS[mode]:
        dv = rest[0] if rest else d
        hkv = rest[1] if len(rest) > 1 else h
        name = (f"{b}x{h}{f'/{hkv}' if hkv != h else ''}x{s}x{d}"
                f"{f'/{dv}' if dv != d else ''}{'c' if causal else ''}")
        if not only.search(name):
            continue
        # sm_80's kernels take one head dim for q and v (FLASHCORE_CHIP
        # runs them on Hopper).
        if dv != d and os.environ.get("FLASHCORE_CHIP") == "sm_80":
            continue
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, s, heads, width, device="cuda",
                               dtype=torch.bfloat16, requires_grad=backward)
                   for heads, width in ((h, d), (hkv, d), (hkv, dv)))
        flops = 2 * b * h * s * s * (d + dv) / (2 if causal else 1)
        if not backward:
            ms = back_to_back_ms(
                lambda: flashcore.attention(q, k, v, causal=causal),
                calls=10, rounds=7)
        else:
            o = flashcore.attention(q, k, v, causal=causal)
            dout = torch.randn_like(o)
            ms = back_to_back_ms(
                lambda: torch.autograd.grad(o, (q, k, v), dout,
                                            retain_graph=True),
                calls=5, rounds=7)
            flops *= 2.5
        print(f"{name} {flops / ms / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
