"""flashcore (the installed wheel) on the GPU, against torch on the device:
the attention grid of scripts/gpu/attention.sh through flashcore.attention
(BSHD and BHSD, GQA/MQA, causal, windows, LSE), its gradients against
torch's autograd (and the same bits twice), flashcore.attention_with_kvcache
over caches filled to per-sequence lengths (NaN past them: decode,
speculative decoding, prefill, split-KV), torch.library.opcheck,
flashcore.attention_varlen over packed
sequences of ragged lengths (NaN past them), torch.compile(fullgraph=True)
with inductor, CUDA graph capture and replay
(precompiled and warmed up; an uncompiled kernel is refused, not compiled),
resample in every mode against a torch reference, and the errors of bad
CUDA input. One line per check, a table last; exit 0 when all pass.

Usage (GPU machine): python3 scripts/gpu/python_check.py
"""

import ctypes
import os
import subprocess
import sys
import tempfile

import torch

import flashcore
from check_table import check, print_table
from torch_reference import (check_gradients, compare_attention, reference,
                             reference_kvcache, reference_varlen)


def randn_bshd(b, heads, seq, d, dtype, bhsd=False):
    """A random [B, S, H, D] tensor on the GPU; with bhsd, [B, H, S, D]
    storage passed as its transpose."""
    if bhsd:
        return torch.randn(b, heads, seq, d, device="cuda",
                           dtype=dtype).transpose(1, 2)
    return torch.randn(b, seq, heads, d, device="cuda", dtype=dtype)


def random_sinks(hq):
    """Sinks around the rows' logits, and one far above them."""
    return (torch.randn(hq, device="cuda") * 2).index_fill_(
        0, torch.tensor([0], device="cuda"), 12.0)


def attention_case(b, hq, hkv, sq, sk, d, dtype, causal=False, window=None,
                   scale=None, bhsd=False, lse=True, softcap=0.0,
                   sinks=False, dv=None):
    """flashcore.attention against reference; dv: v's head dim where it
    differs from q's and k's d."""
    def run():
        q = randn_bshd(b, hq, sq, d, dtype, bhsd)
        k = randn_bshd(b, hkv, sk, d, dtype, bhsd)
        v = randn_bshd(b, hkv, sk, dv or d, dtype, bhsd)
        s = random_sinks(hq) if sinks else None
        got = flashcore.attention(q, k, v, causal=causal, window=window,
                                  scale=scale, return_lse=lse,
                                  softcap=softcap, sinks=s)
        o, o_lse = got if lse else (got, None)
        ref, ref_lse = reference(q, k, v, causal, window, scale, torch.float32,
                                 softcap, s)
        low, _ = reference(q, k, v, causal, window, scale, dtype, softcap, s)
        return compare_attention(q, o, o_lse, ref, ref_lse, low)
    return run


def attention_grid():
    for dtype in (torch.bfloat16, torch.float16):
        for d in (64, 128, 256):
            for causal in (False, True):
                for sq, sk in ((1, 1), (17, 113), (113, 17), (1000, 1000),
                               (4097, 4097)):
                    name = (f"attention {str(dtype)[6:]} d{d} "
                            f"{'causal' if causal else 'non-causal'} "
                            f"Sq={sq} Sk={sk}")
                    check(name, attention_case(1, 2, 2, sq, sk, d, dtype,
                                               causal=causal))
    bf16 = torch.bfloat16
    # The other head dims: every multiple of 8 from 32 to 256.
    for d in range(32, 257, 8):
        if d in (64, 128, 256):
            continue
        check(f"attention bf16 d{d} GQA 2:1 non-causal Sq=1000 Sk=700",
              attention_case(1, 4, 2, 1000, 700, d, bf16))
    # Long queries: d72 to d96 take 3 consumers of 96-key blocks there.
    for d, causal in ((80, False), (96, True)):
        check(f"attention bf16 d{d} {'causal' if causal else 'non-causal'} "
              "GQA 2:1 Sq=Sk=4097",
              attention_case(1, 4, 2, 4097, 4097, d, bf16, causal=causal))
    # Causal row blocks odd in count (3 and 5 of 128 rows; d256's tile too)
    # over more units than a wave: the CTAs take every (batch, head)'s
    # pairs, then the middle row blocks alone, so a CTA's units cross from
    # one kind to the other.
    for b, hq, hkv, sq, sk, d in ((8, 16, 16, 333, 333, 128),
                                  (8, 16, 4, 640, 640, 64),
                                  (8, 16, 16, 333, 1000, 128),
                                  (8, 16, 8, 333, 333, 256)):
        check(f"attention bf16 d{d} causal GQA {hq}:{hkv} B={b} "
              f"Sq={sq} Sk={sk} (odd row blocks)",
              attention_case(b, hq, hkv, sq, sk, d, bf16, causal=True))
    for d in (40, 48, 72, 96, 160, 192, 200):
        check(f"attention f16 d{d} causal BHSD Sq=Sk=1537",
              attention_case(1, 2, 2, 1537, 1537, d, torch.float16,
                             causal=True, bhsd=True))
    # v's head dim apart from q's: DeepSeek's 192/128, narrower and wider
    # v, rounded-up tiles, decode folded and split-KV (the merge of v's).
    for name, case in [
        ("d192 dv128 GQA 2:1 causal Sq=Sk=1537",
         attention_case(1, 8, 4, 1537, 1537, 192, bf16, causal=True, dv=128)),
        ("d192 dv128 f16 BHSD Sq=1000 Sk=700",
         attention_case(2, 4, 4, 1000, 700, 192, torch.float16, bhsd=True,
                        dv=128)),
        ("d64 dv256 causal Sq=300 Sk=1000",
         attention_case(1, 4, 2, 300, 1000, 64, bf16, causal=True, dv=256)),
        ("d128 dv64 window 128,0 causal Sq=Sk=2000",
         attention_case(1, 4, 4, 2000, 2000, 128, bf16, causal=True,
                        window=(128, 0), dv=64)),
        ("d96 dv160 softcap 30 sinks Sq=777 Sk=1234",
         attention_case(1, 4, 4, 777, 1234, 96, bf16, softcap=30.0,
                        sinks=True, dv=160)),
        ("d192 dv128 decode GQA 8:1 B=3 Sk=1000",
         attention_case(3, 16, 2, 1, 1000, 192, bf16, causal=True, dv=128)),
        ("d192 dv128 decode split-KV GQA 4:1 Sk=50000",
         attention_case(1, 32, 8, 1, 50000, 192, bf16, dv=128)),
        ("d88 dv56 GQA 4:1 causal Sq=Sk=1000",
         attention_case(1, 8, 2, 1000, 1000, 88, bf16, causal=True, dv=56)),
        # v's head dim of 72-96 at 4k+ queries takes 192 x 96 beside q's
        # wider or narrower rows.
        ("d128 dv96 GQA 2:1 Sq=Sk=4097",
         attention_case(1, 4, 2, 4097, 4097, 128, bf16, dv=96)),
        ("d192 dv96 causal Sq=Sk=4097",
         attention_case(1, 4, 4, 4097, 4097, 192, bf16, causal=True, dv=96)),
        ("d160 dv80 f16 BHSD Sq=4097 Sk=4500",
         attention_case(1, 2, 2, 4097, 4500, 160, torch.float16, bhsd=True,
                        dv=80)),
        ("d40 decode split-KV GQA 4:1 Sk=50000",
         attention_case(1, 32, 8, 1, 50000, 40, bf16)),
        # Rows that see no key (causal, Sq > Sk) filling whole tiles just
        # above rows that see some: an odd count of 16-byte chunks a row
        # (d40, dv 72) once let an empty tile's zeros spill into the next.
        ("d40 causal Sq=1130 Sk=1000",
         attention_case(4, 8, 8, 1130, 1000, 40, bf16, causal=True)),
        ("d40 dv72 causal Sq=1194 Sk=1000",
         attention_case(4, 8, 8, 1194, 1000, 40, bf16, causal=True, dv=72)),
    ]:
        check("attention " + name, case)
    # Logit softcapping (Gemma 2's 50, and caps that bend most logits: a
    # scale of 1 puts them in the tens).
    for name, case in [
        ("softcap 50 GQA 2:1 causal d256 Sq=Sk=1000",
         attention_case(1, 4, 2, 1000, 1000, 256, bf16, causal=True,
                        softcap=50.0)),
        ("softcap 5 scale 1 d128 Sq=333 Sk=1000",
         attention_case(2, 4, 4, 333, 1000, 128, bf16, scale=1.0,
                        softcap=5.0)),
        ("softcap 2 scale 1 window 64,16 d64 f16 BHSD Sq=Sk=700",
         attention_case(1, 2, 2, 700, 700, 64, torch.float16, scale=1.0,
                        window=(64, 16), softcap=2.0, bhsd=True)),
        ("softcap 3 scale 0.5 causal d96 Sq=17 Sk=4097",
         attention_case(1, 2, 2, 17, 4097, 96, bf16, causal=True, scale=0.5,
                        softcap=3.0)),
        ("softcap 30 decode GQA 8:1 d128 B=3 Sk=1000",
         attention_case(3, 16, 2, 1, 1000, 128, bf16, causal=True,
                        softcap=30.0)),
        ("softcap 30 decode split-KV GQA 4:1 d128 Sk=50000",
         attention_case(1, 32, 8, 1, 50000, 128, bf16, softcap=30.0)),
    ]:
        check("attention " + name, case)
    # Attention sinks (gpt-oss): GQA, windows, decode (folded; split-KV,
    # split 0 adding the sinks), rows that see no key (Sq > Sk causal).
    for name, case in [
        ("sinks GQA 8:1 causal d64 Sq=Sk=1000",
         attention_case(2, 16, 2, 1000, 1000, 64, bf16, causal=True,
                        sinks=True)),
        ("sinks window 128,0 causal d64 BHSD Sq=Sk=2000",
         attention_case(1, 8, 8, 2000, 2000, 64, bf16, causal=True,
                        window=(128, 0), bhsd=True, sinks=True)),
        ("sinks causal d128 f16 Sq=300 Sk=100 (rows without keys)",
         attention_case(1, 4, 4, 300, 100, 128, torch.float16, causal=True,
                        sinks=True)),
        ("sinks decode GQA 8:1 d64 B=4 Sk=4097",
         attention_case(4, 64, 8, 1, 4097, 64, bf16, causal=True,
                        sinks=True)),
        ("sinks decode split-KV B=1 GQA 8:1 d128 Sk=50000",
         attention_case(1, 64, 8, 1, 50000, 128, bf16, sinks=True)),
        ("sinks softcap 20 d96 Sq=333 Sk=777",
         attention_case(1, 4, 2, 333, 777, 96, bf16, softcap=20.0,
                        sinks=True)),
    ]:
        check("attention " + name, case)
    for name, case in [
        ("decode GQA 4:1 d96 B=3 Sk=1000",
         attention_case(3, 32, 8, 1, 1000, 96, bf16, causal=True)),
        ("decode split-KV B=1 GQA 8:1 d192 Sk=20000",
         attention_case(1, 16, 2, 1, 20000, 192, bf16)),
        ("GQA 8:1 causal d80 Sq=17 Sk=4097",
         attention_case(2, 16, 2, 17, 4097, 80, bf16, causal=True)),
        ("GQA 8:1 causal d128 B=2 Sq=333 Sk=1000",
         attention_case(2, 16, 2, 333, 1000, 128, bf16, causal=True)),
        ("MQA d64 Sq=1000 Sk=17", attention_case(1, 8, 1, 1000, 17, 64, bf16)),
        ("MQA causal d256 f16 Sq=17 Sk=4097",
         attention_case(1, 4, 1, 17, 4097, 256, torch.float16, causal=True)),
        ("window 32,0 causal GQA d128 Sq=Sk=1000",
         attention_case(1, 4, 2, 1000, 1000, 128, bf16, causal=True,
                        window=(32, 0))),
        ("window 100,50 d64 Sq=700 Sk=900",
         attention_case(1, 2, 2, 700, 900, 64, bf16, window=(100, 50))),
        ("BHSD causal d128 bf16 Sq=Sk=1000",
         attention_case(1, 4, 4, 1000, 1000, 128, bf16, causal=True, bhsd=True)),
        ("BHSD GQA d64 f16 scale 0.3 Sq=500 Sk=700",
         attention_case(2, 8, 2, 500, 700, 64, torch.float16, scale=0.3,
                        bhsd=True)),
        ("long causal GQA d128 Sq=Sk=16384",
         attention_case(1, 4, 2, 16384, 16384, 128, bf16, causal=True)),
        ("many tiles d64 B=3 H=20 Sq=777 Sk=1500 no lse",
         attention_case(3, 20, 20, 777, 1500, 64, bf16, lse=False)),
        # One query: a GQA group's heads are folded into one tile's rows.
        ("decode GQA 4:1 causal d128 B=3 Sk=1000",
         attention_case(3, 32, 8, 1, 1000, 128, bf16, causal=True)),
        ("decode GQA 8:1 d64 f16 B=2 Sk=4097",
         attention_case(2, 16, 2, 1, 4097, 64, torch.float16)),
        ("decode MQA causal d256 BHSD Sk=77",
         attention_case(2, 6, 1, 1, 77, 256, bf16, causal=True, bhsd=True)),
        ("decode GQA 4:1 window 64,0 causal d128 Sk=1000 (packed, not folded)",
         attention_case(2, 8, 2, 1, 1000, 128, bf16, causal=True,
                        window=(64, 0))),
        # Few rows: the keys split over CTAs and merged (split-KV).
        ("decode split-KV B=1 GQA 4:1 d128 Sk=70000",
         attention_case(1, 32, 8, 1, 70000, 128, bf16, causal=True)),
        ("decode split-KV B=2 GQA 8:1 d64 f16 Sk=5000",
         attention_case(2, 16, 2, 1, 5000, 64, torch.float16)),
        ("decode split-KV B=1 MQA d256 BHSD Sk=3001",
         attention_case(1, 4, 1, 1, 3001, 256, bf16, bhsd=True)),
        ("decode split-KV B=1 window 500,0 causal d128 Sk=9000",
         attention_case(1, 4, 4, 1, 9000, 128, bf16, causal=True,
                        window=(500, 0))),
        # A few queries: on sm_90a a group's heads packed into one tile's
        # rows (pack_query_heads), row r query r / G of head r % G.
        ("packed GQA 4:1 Sq=4 causal d128 B=3 Sk=1000",
         attention_case(3, 32, 8, 4, 1000, 128, bf16, causal=True)),
        ("packed GQA 8:1 Sq=16 f16 d64 BHSD B=2 Sk=4097",
         attention_case(2, 16, 2, 16, 4097, 64, torch.float16, bhsd=True)),
        ("packed GQA 6:1 Sq=3 causal d256 sinks Sk=77",
         attention_case(2, 6, 1, 3, 77, 256, bf16, causal=True, sinks=True)),
        ("packed GQA 7:1 Sq=2 d96 softcap 30 Sk=3000",
         attention_case(2, 14, 2, 2, 3000, 96, bf16, softcap=30.0)),
        ("packed GQA 4:1 Sq=5 window 64,0 causal d128 Sk=1000",
         attention_case(2, 8, 2, 5, 1000, 128, bf16, causal=True,
                        window=(64, 0))),
        ("packed GQA 4:1 Sq=8 causal d128 Sk=5 (rows without keys)",
         attention_case(2, 8, 2, 8, 5, 128, bf16, causal=True)),
        ("packed split-KV B=1 GQA 8:1 Sq=4 causal d128 Sk=70000",
         attention_case(1, 32, 4, 4, 70000, 128, bf16, causal=True)),
        ("packed split-KV B=1 MQA Sq=6 f16 d64 BHSD Sk=20000 sinks",
         attention_case(1, 8, 1, 6, 20000, 64, torch.float16, bhsd=True,
                        sinks=True)),
    ]:
        check("attention " + name, case)


def cache_lengths(b, low, high, *edges):
    """b cache lengths: edges, then random ones in [low, high)."""
    return list(edges) + torch.randint(low, high, (b - len(edges),)).tolist()


def page_caches(caches, page_size, lengths, bhsd):
    """The caches [B, S_cache, H, D] as pools of page_size-row pages in
    shuffled order, with a spare page per entry that no table lists (NaN,
    as every position past a length): the pools [pages, page_size, H, D]
    ([pages, H, page_size, D] transposed where bhsd) and the page table.
    Entries of pages wholly past an entry's length are out of range: they
    must not be read."""
    b, s_cache, h, _ = caches[0].shape
    per_sequence = s_cache // page_size
    pages = b * (per_sequence + 1)
    table = torch.randperm(pages, device="cuda")[:b * per_sequence]
    table = table.view(b, per_sequence).to(torch.int32)
    pools = []
    for cache in caches:
        d = cache.shape[3]
        shape = (pages, h, page_size, d) if bhsd else (pages, page_size, h, d)
        pool = torch.full(shape, float("nan"), dtype=cache.dtype,
                          device="cuda")
        pool = pool.transpose(1, 2) if bhsd else pool
        pool[table.flatten().long()] = cache.reshape(
            b * per_sequence, page_size, h, d)
        pools.append(pool)
    unused = torch.arange(per_sequence, device="cuda") * page_size >= \
        lengths[:, None]
    table.masked_fill_(unused, -1 << 30)
    return pools, table


def kvcache_case(b, hq, hkv, sq, s_cache, d, dtype, lengths, causal=False,
                 window=None, softcap=0.0, sinks=False, bhsd=False, lse=True,
                 page_size=None, dv=None):
    """flashcore.attention_with_kvcache of q over caches of s_cache
    positions filled to lengths (b ints as an int32 tensor, or one int
    passed as it is; None: no cache_seqlens, every cache full), against
    reference_kvcache. Every position at or past its entry's length holds
    NaN: none may reach o or lse. With page_size,
    the caches are paged (page_caches: shuffled pages, NaN spares, the
    entries of unused pages out of range)."""
    def run():
        q = randn_bshd(b, hq, sq, d, dtype, bhsd)
        k_cache = randn_bshd(b, hkv, s_cache, d, dtype, bhsd)
        v_cache = randn_bshd(b, hkv, s_cache, dv or d, dtype, bhsd)
        n = torch.tensor([s_cache if lengths is None else lengths] * b
                         if lengths is None or isinstance(lengths, int) else
                         lengths, dtype=torch.int32, device="cuda")
        stale = torch.arange(s_cache, device="cuda") >= n[:, None]
        for t in (k_cache, v_cache):
            t.masked_fill_(stale[:, :, None, None], float("nan"))
        s = random_sinks(hq) if sinks else None
        k_in, v_in, table = k_cache, v_cache, None
        if page_size:
            (k_in, v_in), table = page_caches((k_cache, v_cache), page_size,
                                              n, bhsd)
        got = flashcore.attention_with_kvcache(
            q, k_in, v_in,
            lengths if lengths is None or isinstance(lengths, int) else n,
            page_table=table, causal=causal, window=window, softcap=softcap,
            sinks=s, return_lse=lse)
        o, o_lse = got if lse else (got, None)
        for name, t in (("o", o), ("lse", o_lse)):
            assert t is None or not t.isnan().any(), \
                f"NaN in {name}: a cache position past its length was read"
        ref, ref_lse = reference_kvcache(q, k_cache, v_cache, n, causal,
                                         window, None, torch.float32,
                                         softcap, s)
        low, _ = reference_kvcache(q, k_cache, v_cache, n, causal, window,
                                   None, dtype, softcap, s)
        return (f"lengths {n.min().item()}..{n.max().item()}, " +
                compare_attention(q, o, o_lse, ref, ref_lse, low))
    return run


def kvcache_full_is_attention():
    """cache_seqlens=None: every cache full, flashcore.attention's bits."""
    q = torch.randn(4, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(4, 3000, 8, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    o, lse = flashcore.attention_with_kvcache(q, k, v, causal=True,
                                              return_lse=True)
    o2, lse2 = flashcore.attention(q, k, v, causal=True, return_lse=True)
    assert torch.equal(o, o2) and torch.equal(lse, lse2), "differs"
    return "the same bits"


def kvcache_grid():
    bf16, f16 = torch.bfloat16, torch.float16
    # Decode over caches of 8192 positions filled to random lengths, 0, 1
    # and all of them: GQA (a group's heads folded into a tile's rows) and
    # MQA.
    for dtype in (bf16, f16):
        for d in (64, 96, 128, 256):
            for hkv, heads, causal in ((8, "GQA 4:1", True),
                                       (1, "MQA", False)):
                name = (f"kvcache {str(dtype)[6:]} d{d} decode {heads} "
                        f"{'causal' if causal else 'non-causal'} B=64 "
                        "S_cache=8192")
                check(name, kvcache_case(
                    64, 32, hkv, 1, 8192, d, dtype,
                    cache_lengths(64, 0, 8192, 0, 1, 8192), causal=causal))
    for name, case in [
        # Speculative decoding: 4 queries; a length under 4 leaves the first
        # rows without keys (zeros, lse +inf).
        ("bf16 d128 Sq=4 GQA 4:1 causal B=16 S_cache=4096",
         kvcache_case(16, 32, 8, 4, 4096, 128, bf16,
                      cache_lengths(16, 0, 4097, 0, 1, 2, 3, 4, 4096),
                      causal=True)),
        ("f16 d64 Sq=4 MQA causal B=16 S_cache=1000",
         kvcache_case(16, 16, 1, 4, 1000, 64, f16,
                      cache_lengths(16, 0, 1001, 0, 1, 3, 4, 1000),
                      causal=True)),
        # Prefill-like: 300 queries over lengths from 300 to the whole
        # cache.
        ("bf16 d128 Sq=300 GQA 2:1 causal B=4 S_cache=2048",
         kvcache_case(4, 16, 8, 300, 2048, 128, bf16,
                      cache_lengths(4, 300, 2049, 300, 2048), causal=True)),
        ("f16 d256 Sq=300 GQA 2:1 non-causal B=4 S_cache=2048",
         kvcache_case(4, 8, 4, 300, 2048, 256, f16,
                      cache_lengths(4, 300, 2049, 300, 2048))),
        ("bf16 d96 Sq=300 causal BHSD B=3 S_cache=1500",
         kvcache_case(3, 4, 4, 300, 1500, 96, bf16,
                      cache_lengths(3, 300, 1501, 300, 1500), causal=True,
                      bhsd=True)),
        # Windows, aligned to each length's end.
        ("bf16 d64 Sq=300 window 128,0 causal B=4 S_cache=2048",
         kvcache_case(4, 8, 8, 300, 2048, 64, bf16,
                      cache_lengths(4, 300, 2049, 300, 2048), causal=True,
                      window=(128, 0))),
        ("bf16 d128 decode GQA 4:1 window 256,0 causal B=16 S_cache=8192",
         kvcache_case(16, 32, 8, 1, 8192, 128, bf16,
                      cache_lengths(16, 0, 8193, 0, 1, 8192), causal=True,
                      window=(256, 0))),
        # Few rows: each row's keys split over CTAs (split-KV), splits past
        # a short length empty.
        ("bf16 d128 decode split-KV B=1 GQA 4:1 S_cache=65536 length 40000",
         kvcache_case(1, 32, 8, 1, 65536, 128, bf16, [40000])),
        ("f16 d64 decode split-KV B=2 GQA 4:1 causal S_cache=65536 lengths "
         "65536, 777",
         kvcache_case(2, 32, 8, 1, 65536, 64, f16, [65536, 777],
                      causal=True)),
        # v's head dim apart from q's, paged: decode split over pages of
        # 64 rows (the merge of v's), prefill.
        ("bf16 d192 dv128 decode split-KV GQA 8:1 B=2 S_cache=32768 pages "
         "of 64",
         kvcache_case(2, 16, 2, 1, 32768, 192, bf16, [32768, 3001], dv=128,
                      page_size=64)),
        ("bf16 d192 dv128 Sq=300 causal B=3 S_cache=1500",
         kvcache_case(3, 8, 2, 300, 1500, 192, bf16,
                      cache_lengths(3, 300, 1501, 300, 1500), causal=True,
                      dv=128)),
        # Lengths below 0 count as 0, above the cache as the cache.
        ("bf16 d64 decode GQA 4:1 B=4 S_cache=1000 lengths -3, 0, 1000, 5000",
         kvcache_case(4, 32, 8, 1, 1000, 64, bf16, [-3, 0, 1000, 5000])),
        ("bf16 d128 decode softcap 30 GQA 4:1 B=16 S_cache=4096",
         kvcache_case(16, 32, 8, 1, 4096, 128, bf16,
                      cache_lengths(16, 0, 4097, 0, 1, 4096), softcap=30.0)),
        ("bf16 d64 decode sinks GQA 4:1 B=16 S_cache=4096",
         kvcache_case(16, 32, 8, 1, 4096, 64, bf16,
                      cache_lengths(16, 0, 4097, 0, 1, 4096), sinks=True)),
        ("bf16 d128 decode sinks split-KV B=1 GQA 8:1 S_cache=65536 length "
         "30000",
         kvcache_case(1, 64, 8, 1, 65536, 128, bf16, [30000], sinks=True)),
        ("bf16 d128 decode GQA 4:1 B=8 S_cache=8192 cache_seqlens=5000 (an "
         "int), no lse",
         kvcache_case(8, 32, 8, 1, 8192, 128, bf16, 5000, lse=False)),
    ]:
        check("kvcache " + name, case)
    check("kvcache cache_seqlens=None is flashcore.attention",
          kvcache_full_is_attention)


def paged_kvcache_grid():
    """Paged caches of 16, 64 and 256-row pages (a K/V block of 16-row
    pages is 8 TMA boxes on sm_90a, of 256-row ones half a page), pages
    shuffled, lengths with 0 and 1."""
    bf16, f16 = torch.bfloat16, torch.float16
    for page in (16, 64, 256):
        for dtype, d, hkv, heads, causal in ((bf16, 128, 8, "GQA 4:1", True),
                                             (f16, 64, 1, "MQA", False)):
            check(f"paged kvcache page {page} {str(dtype)[6:]} d{d} decode "
                  f"{heads} {'causal' if causal else 'non-causal'} B=32 "
                  "S_cache=4096",
                  kvcache_case(32, 32, hkv, 1, 4096, d, dtype,
                               cache_lengths(32, 0, 4097, 0, 1, page - 1,
                                             page, page + 1, 4096),
                               causal=causal, page_size=page))
    for name, case in [
        ("page 16 bf16 d256 decode GQA 8:1 B=16 S_cache=2048",
         kvcache_case(16, 16, 2, 1, 2048, 256, bf16,
                      cache_lengths(16, 0, 2049, 0, 1, 2048), page_size=16)),
        ("page 64 f16 d96 Sq=4 GQA 4:1 causal B=16 S_cache=4096",
         kvcache_case(16, 32, 8, 4, 4096, 96, f16,
                      cache_lengths(16, 0, 4097, 0, 1, 3, 4, 4096),
                      causal=True, page_size=64)),
        # Pages of 8 rows, the smallest: 16 boxes a prefill block, 24 a
        # decode block.
        *[(f"page {page} bf16 d128 Sq=300 GQA 2:1 causal B=4 S_cache=2048",
           kvcache_case(4, 16, 8, 300, 2048, 128, bf16,
                        cache_lengths(4, 300, 2049, 300, 2048), causal=True,
                        page_size=page))
          for page in (16, 8)],
        ("page 8 bf16 d128 decode GQA 4:1 B=8 S_cache=4096",
         kvcache_case(8, 32, 8, 1, 4096, 128, bf16,
                      cache_lengths(8, 0, 4097, 0, 1, 7, 8, 9, 4096),
                      page_size=8)),
        ("page 256 f16 d64 Sq=300 non-causal BHSD B=3 S_cache=1536",
         kvcache_case(3, 8, 4, 300, 1536, 64, f16,
                      cache_lengths(3, 300, 1537, 300, 1536), bhsd=True,
                      page_size=256)),
        ("page 64 bf16 d128 Sq=300 window 128,0 causal B=4 S_cache=2048",
         kvcache_case(4, 8, 8, 300, 2048, 128, bf16,
                      cache_lengths(4, 300, 2049, 300, 2048), causal=True,
                      window=(128, 0), page_size=64)),
        ("page 256 bf16 d128 decode split-KV B=1 GQA 8:1 S_cache=65536 "
         "length 50000",
         kvcache_case(1, 64, 8, 1, 65536, 128, bf16, [50000],
                      page_size=256)),
        # No cache_seqlens: every table's pages full, the last key block
        # past the capacity.
        ("page 16 bf16 d128 Sq=300 GQA 2:1 causal B=2 S_cache=1008 without "
         "cache_seqlens",
         kvcache_case(2, 8, 4, 300, 1008, 128, bf16, None, causal=True,
                      page_size=16)),
        ("page 64 f16 d64 decode GQA 4:1 B=4 S_cache=4032 without "
         "cache_seqlens",
         kvcache_case(4, 32, 8, 1, 4032, 64, f16, None, page_size=64)),
        ("page 16 bf16 d128 decode split-KV sinks B=2 GQA 4:1 causal "
         "S_cache=32768 lengths 32768, 5",
         kvcache_case(2, 32, 8, 1, 32768, 128, bf16, [32768, 5],
                      causal=True, sinks=True, page_size=16)),
    ]:
        check("paged kvcache " + name, case)


def varlen_case(query_lengths, key_lengths, hq, hkv, d, dtype, causal=False,
                window=None, softcap=0.0, sinks=False, lse=True, bshd=True,
                dv=None):
    """flashcore.attention_varlen of sequences of query_lengths and
    key_lengths packed without padding (q [total_q, Hq, D]; BSHD-packed, or
    with bshd False each [H, total, D] storage transposed), against
    reference_varlen. Past the last sequence q, k and v hold NaN rows (the
    tensors are longer than the sequences): none may reach o or lse, and
    o's rows there must stay unwritten."""
    def run():
        def packed(lengths, heads, spare, d=d):
            total = sum(lengths) + spare
            if bshd:
                t = torch.randn(total, heads, d, device="cuda", dtype=dtype)
            else:
                t = torch.randn(heads, total, d, device="cuda",
                                dtype=dtype).transpose(0, 1)
            t[sum(lengths):] = float("nan")
            offsets = torch.tensor([0] + torch.tensor(lengths).cumsum(0)
                                   .tolist(), dtype=torch.int32,
                                   device="cuda")
            return t, offsets
        q, cu_q = packed(query_lengths, hq, 5)
        k, cu_k = packed(key_lengths, hkv, 7)
        v, _ = packed(key_lengths, hkv, 7, dv or d)
        s = random_sinks(hq) if sinks else None
        got = flashcore.attention_varlen(
            q, k, v, cu_q, cu_k, max(query_lengths), max(key_lengths),
            causal=causal, window=window, softcap=softcap, sinks=s,
            return_lse=lse)
        o, o_lse = got if lse else (got, None)
        rows = sum(query_lengths)
        ref, ref_lse = reference_varlen(q, k, v, cu_q, cu_k, causal, window,
                                        None, torch.float32, softcap, s)
        low, _ = reference_varlen(q, k, v, cu_q, cu_k, causal, window, None,
                                  dtype, softcap, s)
        for name, t in (("o", o[:rows]), ("lse", o_lse)):
            assert t is None or not t[..., :rows].isnan().any(), \
                f"NaN in {name}: a row past a sequence was read"
        return (f"B={len(query_lengths)} total {rows}/{sum(key_lengths)}, " +
                compare_attention(q[:rows], o[:rows],
                                  None if o_lse is None else o_lse[:, :rows],
                                  ref[:rows], ref_lse[:, :rows], low[:rows]))
    return run


def varlen_paged_case(query_lengths, key_lengths, hq, hkv, d, dtype,
                      page_size, causal=False):
    """flashcore.attention_varlen of packed queries over a paged cache
    (chunked prefill): each sequence's keys in shuffled pages of page_size
    rows (page_caches: NaN past its length and in the spare pages, the
    table's entries past it out of range), seqused_k its key count; against
    reference_varlen over the same keys packed."""
    def run():
        b = len(query_lengths)
        s_cache = max(page_size, -(-max(key_lengths) // page_size) * page_size)
        caches = [torch.randn(b, s_cache, hkv, d, device="cuda", dtype=dtype)
                  for _ in range(2)]
        n = torch.tensor(key_lengths, dtype=torch.int32, device="cuda")
        stale = torch.arange(s_cache, device="cuda") >= n[:, None]
        for t in caches:
            t.masked_fill_(stale[:, :, None, None], float("nan"))
        (pk, pv), table = page_caches(caches, page_size, n, False)
        q = torch.randn(sum(query_lengths), hq, d, device="cuda", dtype=dtype)
        cu_q = torch.tensor([0] + torch.tensor(query_lengths).cumsum(0)
                            .tolist(), dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0] + torch.tensor(key_lengths).cumsum(0)
                            .tolist(), dtype=torch.int32, device="cuda")
        k, v = (torch.cat([t[i, :key_lengths[i]] for i in range(b)])
                for t in caches)
        o, o_lse = flashcore.attention_varlen(
            q, pk, pv, cu_q, None, max(query_lengths), causal=causal,
            seqused_k=n, page_table=table, return_lse=True)
        for name, t in (("o", o), ("lse", o_lse)):
            assert not t.isnan().any(), \
                f"NaN in {name}: a key past its sequence's count was read"
        ref, ref_lse = reference_varlen(q, k, v, cu_q, cu_k, causal, None,
                                        None, torch.float32)
        low, _ = reference_varlen(q, k, v, cu_q, cu_k, causal, None, None,
                                  dtype)
        return f"B={b}, " + compare_attention(q, o, o_lse, ref, ref_lse, low)
    return run


def varlen_unwritten_rows():
    """Rows of o past the last sequence keep what they held (an o filled
    with 7 before the call, through the launch attention_varlen makes), and
    the rows inside are attention_varlen's bits."""
    q = torch.randn(64, 4, 128, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q[:, :2]), torch.randn_like(q[:, :2])
    cu = torch.tensor([0, 10, 30], dtype=torch.int32, device="cuda")
    o = flashcore.attention_varlen(q, k, v, cu, cu, 20, 20)
    filled = torch.full_like(q, 7.0)
    flashcore._ops._run_attention(
        q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), filled.data_ptr(), 0,
        False, None, None, 0.0, None, 0,
        flashcore._ops._Sequences(cu_seqlens_q=cu, cu_seqlens_k=cu,
                                  max_seqlen_q=20), flashcore._ops._VARLEN)
    assert torch.equal(filled[:30], o[:30]), "differs from attention_varlen"
    assert (filled[30:] == 7.0).all(), \
        "a row past the last sequence was written"
    return "rows past the sequences untouched"


def varlen_split_decode(hq, hkv, sinks=False, paged=0):
    """Decode of packed sequences whose few tiles leave SMs idle: each
    sequence's keys split (the call asks for a workspace: max_seqlen_k
    given, or a paged cache's capacity) and merged over the sequences' rows
    only. Its sequences start at row 2 and end 3 rows before q's end (NaN
    rows outside them), o is filled with 7 before the call, and the rows
    outside every sequence must keep it; against reference_varlen."""
    def run():
        bf16 = torch.bfloat16
        keys = [4000, 1, 0, 2500, 7000]
        queries = [1, 1, 1, 0, 1]
        q = torch.full((2 + len(queries) + 3, hq, 128), float("nan"),
                       device="cuda", dtype=bf16)
        q[2:2 + sum(queries)] = torch.randn(sum(queries), hq, 128,
                                            device="cuda", dtype=bf16)
        cu_q = torch.tensor([2] + (2 + torch.tensor(queries).cumsum(0))
                            .tolist(), dtype=torch.int32, device="cuda")
        cu_k = torch.tensor([0] + torch.tensor(keys).cumsum(0).tolist(),
                            dtype=torch.int32, device="cuda")
        k = torch.randn(sum(keys), hkv, 128, device="cuda", dtype=bf16)
        v = torch.randn_like(k)
        s = random_sinks(hq) if sinks else None
        if paged:
            s_cache = -(-max(keys) // paged) * paged
            caches = [torch.full((len(keys), s_cache, hkv, 128),
                                 float("nan"), device="cuda", dtype=bf16)
                      for _ in range(2)]
            for i, n in enumerate(keys):
                caches[0][i, :n] = k[cu_k[i]:cu_k[i + 1]]
                caches[1][i, :n] = v[cu_k[i]:cu_k[i + 1]]
            n = torch.tensor(keys, dtype=torch.int32, device="cuda")
            (pk, pv), table = page_caches(caches, paged, n, False)
            views = (q.unsqueeze(0), pk, pv)
            sequences = flashcore._ops._Sequences(n, table, cu_q, None, 1)
        else:
            views = (q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0))
            sequences = flashcore._ops._Sequences(None, None, cu_q, cu_k, 1,
                                                  max(keys))
        o = torch.full((q.shape[0], hq, 128), 7.0, device="cuda", dtype=bf16)
        lse = torch.full((hq, q.shape[0]), 7.0, device="cuda")
        workspace = flashcore._ops._fill_attention_desc(
            *views, o.data_ptr(), lse.data_ptr(), False, None, None, 0.0, s,
            sequences, flashcore._ops._VARLEN)
        assert workspace > 0, "the call did not split its keys"
        flashcore._ops._run_attention(
            *views, o.data_ptr(), lse.data_ptr(), False, None, None, 0.0, s,
            0, sequences, flashcore._ops._VARLEN)
        inside = slice(2, 2 + sum(queries))
        for name, t in (("o", o), ("lse", lse.t())):
            assert (t[:2] == 7.0).all() and (t[inside.stop:] == 7.0).all(), \
                f"a row of {name} outside every sequence was written"
        ref, ref_lse = reference_varlen(q, k, v, cu_q, cu_k, False, None,
                                        None, torch.float32, 0.0, s)
        low, _ = reference_varlen(q, k, v, cu_q, cu_k, False, None, None,
                                  bf16, 0.0, s)
        return (f"{workspace} B of workspace, " +
                compare_attention(q[inside], o[inside], lse[:, inside],
                                  ref[inside], ref_lse[:, inside],
                                  low[inside]))
    return run


def varlen_grid():
    bf16, f16 = torch.bfloat16, torch.float16
    # Ragged lengths with 0 and 1, Sq != Sk per sequence, GQA and MQA,
    # causal and not, windows, both packings; every head dim class.
    ragged_q = [5, 0, 1, 130, 77, 300, 128, 1]
    ragged_k = [9, 3, 1, 300, 77, 1000, 128, 0]
    for dtype in (bf16, f16):
        for d in (64, 96, 128, 256):
            for hkv, heads in ((2, "GQA 4:1"), (1, "MQA"), (8, "MHA")):
                for causal in (False, True):
                    check(f"varlen {str(dtype)[6:]} d{d} {heads} "
                          f"{'causal' if causal else 'non-causal'} ragged",
                          varlen_case(ragged_q, ragged_k, 8, hkv, d, dtype,
                                      causal=causal))
    # Prefill-like: equal query and key lengths, mixed sizes.
    mixed = [1024, 37, 513, 2048, 1, 700, 129, 256]
    for causal in (False, True):
        check(f"varlen bf16 d128 GQA 32:8 {'causal' if causal else 'non-causal'}"
              " mixed prefill", varlen_case(mixed, mixed, 32, 8, 128, bf16,
                                            causal=causal))
    check("varlen bf16 d128 window (64, 0) causal",
          varlen_case(mixed, mixed, 8, 2, 128, bf16, causal=True,
                      window=(64, 0)))
    check("varlen bf16 d64 BHSD-packed softcap sinks",
          varlen_case(ragged_q, ragged_k, 8, 2, 64, bf16, softcap=30.0,
                      sinks=True, bshd=False))
    check("varlen f16 d128 without lse",
          varlen_case(ragged_q, ragged_k, 8, 8, 128, f16, lse=False))
    check("varlen bf16 d72 GQA 4:1 causal ragged",
          varlen_case(ragged_q, ragged_k, 8, 2, 72, bf16, causal=True))
    check("varlen bf16 d192 dv128 GQA 4:1 causal ragged",
          varlen_case(ragged_q, ragged_k, 8, 2, 192, bf16, causal=True,
                      dv=128))
    check("varlen rows past the sequences", varlen_unwritten_rows)
    # More sequences than a warp's 32 lanes: the tiles' search walks
    # further chunks of them (the consumers hold the first).
    many_q = [(i * 37) % 150 for i in range(77)]
    many_k = [(i * 53) % 301 for i in range(77)]
    for causal in (False, True):
        check(f"varlen bf16 d128 GQA 4:1 {'causal' if causal else 'non-causal'}"
              " 77 sequences", varlen_case(many_q, many_k, 8, 2, 128, bf16,
                                           causal=causal))
    # Many sequences of equal key lengths, empty keys among them, past a
    # warp's 32 (what an order of the tiles by length would have to get
    # right: decode-notes v24).
    tied_q = [(i * 37) % 150 + 1 for i in range(40)]
    tied_k = [(0, 64, 300, 1000)[i % 4] for i in range(40)]
    for causal in (False, True):
        check(f"varlen bf16 d128 GQA 4:1 {'causal' if causal else 'non-causal'}"
              " 40 sequences, tied key lengths",
              varlen_case(tied_q, tied_k, 8, 2, 128, bf16, causal=causal))
    check("varlen packed heads 8:2 bf16 d128 causal decode 45 sequences",
          varlen_case([int(i % 3 != 1) for i in range(45)],
                      [(i * 97) % 2000 for i in range(45)], 8, 2, 128, bf16,
                      causal=True))
    # Decode of packed sequences (a few queries each, as serving engines
    # batch it): sm_90a packs each KV head's group of query heads into a
    # tile (pack_query_heads), G = 4, 7, 8 and MQA; lengths 0 and 1.
    decode_q = [1, 1, 0, 1, 1, 1, 1]
    spec_q = [4, 0, 1, 3, 16, 2]
    decode_k = [1, 300, 5, 4097, 77, 0, 1000]
    spec_k = [9, 3, 1, 600, 2049, 16]
    for hq, hkv in ((8, 2), (7, 1), (32, 4), (8, 1)):
        for causal in (False, True):
            kind = 'causal' if causal else 'non-causal'
            check(f"varlen packed heads {hq}:{hkv} bf16 d128 {kind} decode",
                  varlen_case(decode_q, decode_k, hq, hkv, 128,
                              torch.bfloat16, causal=causal))
            check(f"varlen packed heads {hq}:{hkv} bf16 d128 {kind} "
                  "speculative", varlen_case(spec_q, spec_k, hq, hkv, 128,
                                             torch.bfloat16, causal=causal))
    for d in (64, 96, 256):
        check(f"varlen packed heads 8:2 f16 d{d} causal speculative",
              varlen_case(spec_q, spec_k, 8, 2, d, torch.float16,
                          causal=True))
    check("varlen packed heads 8:2 bf16 d128 window (64, 0) decode",
          varlen_case(decode_q, decode_k, 8, 2, 128, torch.bfloat16,
                      causal=True, window=(64, 0)))
    check("varlen packed heads 8:2 bf16 d64 BHSD-packed softcap sinks",
          varlen_case(spec_q, spec_k, 8, 2, 64, torch.bfloat16, softcap=30.0,
                      sinks=True, bshd=False))
    check("varlen packed heads 8:2 bf16 d192 dv128 causal speculative",
          varlen_case(spec_q, spec_k, 8, 2, 192, torch.bfloat16, causal=True,
                      dv=128))
    # Few such sequences leave SMs idle: their keys split (sm_90a).
    for hq, hkv in ((8, 2), (32, 8), (8, 8), (4, 1)):
        check(f"varlen split decode {hq}:{hkv} bf16 d128",
              varlen_split_decode(hq, hkv))
    check("varlen split decode 8:2 bf16 d128 sinks",
          varlen_split_decode(8, 2, sinks=True))
    for page_size in (16, 64, 256):
        check(f"varlen split decode paged {page_size} 8:2 bf16 d128",
              varlen_split_decode(8, 2, paged=page_size))
    for page_size in (16, 256):
        check(f"varlen packed heads paged {page_size} bf16 d128 GQA 4:1 "
              "causal decode",
              varlen_paged_case([1, 1, 4, 0, 1, 2], [9, 1, 700, 5, 1000, 0],
                                8, 2, 128, torch.bfloat16, page_size, True))
    # Chunked prefill: new queries over paged caches with key counts (one
    # sequence without keys).
    for page_size in (16, 64, 256):
        for causal in (False, True):
            check(f"varlen paged {page_size} bf16 d128 GQA 4:1 "
                  f"{'causal' if causal else 'non-causal'} chunked prefill",
                  varlen_paged_case([5, 1, 130, 77, 300, 3],
                                    [9, 1, 700, 77, 1000, 0], 8, 2, 128,
                                    torch.bfloat16, page_size, causal))


def backward_case(b, hq, hkv, sq, sk, d, dtype, causal=False, window=None,
                  scale=None, bhsd=False, deterministic=False, sinks=False,
                  softcap=0.0, asked="flag", dv=None):
    """dq, dk and dv of flashcore.attention by autograd against torch's
    autograd of the float32 reference, with FlashAttention's criterion:
    each within twice the error of the same math in the inputs' dtype (plus
    1e-3 of its largest value and 1e-4, for gradients that are zero in
    exact arithmetic). \\p deterministic runs it under
    torch.use_deterministic_algorithms(True) (or, with \\p asked "kwarg",
    flashcore.attention's deterministic=True), and then checks for the same
    bits on a second backward (without it, on the H100, dq is summed by
    reduce-adds in any order). \\p sinks adds attention
    sinks, whose gradient is checked too; \\p softcap caps the logits; \\p dv
    is v's head dim where it differs from q's."""
    def flashcore_gradients(inputs, dout):
        previous = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(deterministic and asked == "flag")
        try:
            o = flashcore.attention(*inputs[:3], causal=causal, window=window,
                                    scale=scale, softcap=softcap,
                                    sinks=inputs[3] if sinks else None,
                                    deterministic=deterministic and
                                    asked == "kwarg")
            return torch.autograd.grad(o, inputs, dout)
        finally:
            torch.use_deterministic_algorithms(previous)

    def run():
        q, k, v = (randn_bshd(b, heads, seq, dim, dtype, bhsd)
                   for heads, seq, dim in ((hq, sq, d), (hkv, sk, d),
                                           (hkv, sk, dv or d)))
        dout = torch.randn(b, sq, hq, dv or d, device="cuda", dtype=dtype)
        inputs = [t.detach().requires_grad_() for t in (q, k, v)]
        s = None
        if sinks:
            s = torch.randn(hq, device="cuda") * 2
            inputs.append(s.detach().requires_grad_())
        got = flashcore_gradients(inputs, dout)
        again = flashcore_gradients(inputs, dout)
        for name, g, g2, t in zip(("q", "k", "v", "sinks"), got, again,
                                  inputs):
            assert g.shape == t.shape and g.stride() == t.stride(), \
                (name, g.shape, g.stride())
            assert not deterministic or torch.equal(g, g2), \
                f"d{name} differs between two deterministic runs"
        return check_gradients(got, q, k, v, dout, causal, window, scale, s,
                               softcap)
    return run


def backward_grid():
    for dtype in (torch.bfloat16, torch.float16):
        for d in (64, 128, 256):
            for causal in (False, True):
                for sq, sk in ((1, 1), (17, 113), (113, 17), (1000, 1000),
                               (4097, 4097)):
                    name = (f"backward {str(dtype)[6:]} d{d} "
                            f"{'causal' if causal else 'non-causal'} "
                            f"Sq={sq} Sk={sk}")
                    check(name, backward_case(1, 2, 2, sq, sk, d, dtype,
                                              causal=causal))
                    if sq in (17, 1000):
                        check(name + " deterministic",
                              backward_case(1, 2, 2, sq, sk, d, dtype,
                                            causal=causal,
                                            deterministic=True))
    bf16 = torch.bfloat16
    for name, case in [
        ("GQA 8:1 causal d128 B=2 Sq=333 Sk=1000",
         backward_case(2, 16, 2, 333, 1000, 128, bf16, causal=True)),
        ("MQA d64 f16 Sq=1000 Sk=17",
         backward_case(1, 8, 1, 1000, 17, 64, torch.float16)),
        # Causal on sm_90a: the CTAs take the key blocks longest first in
        # sections of 7 heads (17 key blocks: 119 CTAs), the last of one
        # head (the grid's three axes folded).
        ("causal GQA 2:1 d128 B=3 Hkv=5 Sq=Sk=2049 (longest first, sections)",
         backward_case(3, 10, 5, 2049, 2049, 128, bf16, causal=True)),
        # Sinks: dq, dk and dv through the backward with the forward's lse
        # (which holds them), dsinks from lse and rowsum(dout * o).
        ("sinks GQA 4:1 causal d128 B=2 Sq=333 Sk=1000",
         backward_case(2, 8, 2, 333, 1000, 128, bf16, causal=True,
                       sinks=True)),
        ("sinks d64 f16 Sq=Sk=700 deterministic",
         backward_case(1, 4, 4, 700, 700, 64, torch.float16, sinks=True,
                       deterministic=True)),
        ("sinks causal d64 Sq=300 Sk=100 (rows without keys)",
         backward_case(1, 4, 4, 300, 100, 64, bf16, causal=True,
                       sinks=True)),
        ("window 32,0 causal GQA d128 Sq=Sk=1000",
         backward_case(1, 4, 2, 1000, 1000, 128, bf16, causal=True,
                       window=(32, 0))),
        ("window 100,50 d64 Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 64, bf16, window=(100, 50))),
        ("BHSD causal d128 Sq=Sk=1000",
         backward_case(1, 4, 4, 1000, 1000, 128, bf16, causal=True,
                       bhsd=True)),
        ("BHSD GQA d64 f16 scale 0.3 Sq=500 Sk=700",
         backward_case(2, 8, 2, 500, 700, 64, torch.float16, scale=0.3,
                       bhsd=True)),
        ("decode Sq=1 GQA 4:1 causal d128 B=3 Sk=1000",
         backward_case(3, 8, 2, 1, 1000, 128, bf16, causal=True)),
        ("MQA d256 window 64,0 causal BHSD Sq=500 Sk=700",
         backward_case(1, 4, 1, 500, 700, 256, bf16, causal=True,
                       window=(64, 0), bhsd=True)),
        # Softcap: dS scaled by the cap's slope, in each backward kernel
        # (sm_90a's with dq_accum, the deterministic ones, d256's three),
        # caps that bend most logits (scale 1) and Gemma's 50.
        ("softcap 30 GQA 4:1 causal d128 B=2 Sq=333 Sk=1000",
         backward_case(2, 8, 2, 333, 1000, 128, bf16, causal=True,
                       softcap=30.0)),
        ("softcap 5 scale 1 d64 Sq=Sk=1000",
         backward_case(1, 4, 4, 1000, 1000, 64, bf16, scale=1.0,
                       softcap=5.0)),
        ("softcap 30 GQA 4:1 causal d128 B=2 Sq=333 Sk=1000 deterministic",
         backward_case(2, 8, 2, 333, 1000, 128, bf16, causal=True,
                       softcap=30.0, deterministic=True)),
        ("softcap 5 scale 1 d64 f16 Sq=Sk=700 deterministic",
         backward_case(1, 4, 4, 700, 700, 64, torch.float16, scale=1.0,
                       softcap=5.0, deterministic=True)),
        ("softcap 2 scale 0.5 window 64,16 d128 BHSD Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 128, bf16, scale=0.5,
                       window=(64, 16), bhsd=True, softcap=2.0)),
        ("softcap 50 causal d256 Sq=500 Sk=700",
         backward_case(1, 4, 2, 500, 700, 256, bf16, causal=True,
                       softcap=50.0)),
        ("softcap 30 sinks causal d64 Sq=300 Sk=100 (rows without keys)",
         backward_case(1, 4, 4, 300, 100, 64, bf16, causal=True, sinks=True,
                       softcap=30.0)),
        # Head dims below the tiles' 64, 128 or 256 columns: zeros past D
        # in every tile, D's columns stored (dq_accum's permuted chunks
        # with a partial last group at 40, 72, 104 and 200).
        ("d96 causal GQA 4:1 B=2 Sq=Sk=1000",
         backward_case(2, 8, 2, 1000, 1000, 96, bf16, causal=True)),
        ("d96 f16 Sq=17 Sk=113", backward_case(1, 2, 2, 17, 113, 96,
                                               torch.float16)),
        ("d40 f16 Sq=1000 Sk=17", backward_case(1, 4, 4, 1000, 17, 40,
                                                torch.float16)),
        ("d32 MQA causal Sq=Sk=777", backward_case(1, 8, 1, 777, 777, 32,
                                                   bf16, causal=True)),
        ("d72 window 100,50 BHSD Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 72, bf16, window=(100, 50),
                       bhsd=True)),
        ("d80 softcap 30 sinks causal Sq=300 Sk=1000",
         backward_case(1, 4, 2, 300, 1000, 80, bf16, causal=True, sinks=True,
                       softcap=30.0)),
        ("d104 Sq=Sk=4097", backward_case(1, 2, 2, 4097, 4097, 104, bf16)),
        ("d192 causal GQA 4:1 Sq=500 Sk=700",
         backward_case(1, 8, 2, 500, 700, 192, bf16, causal=True)),
        ("d200 f16 window 64,0 causal Sq=Sk=1000",
         backward_case(1, 4, 4, 1000, 1000, 200, torch.float16, causal=True,
                       window=(64, 0))),
        ("d160 Sq=113 Sk=17", backward_case(1, 2, 2, 113, 17, 160, bf16)),
        # sm_80's one-pass kernel past 128 (d160, d192: tiles of 192
        # columns, each column of warps 5 or 6 chunk pairs of D).
        ("d160 f16 causal GQA 2:1 B=2 Sq=Sk=1000",
         backward_case(2, 4, 2, 1000, 1000, 160, torch.float16,
                       causal=True)),
        ("d160 Sq=Sk=4097", backward_case(1, 2, 2, 4097, 4097, 160, bf16)),
        ("d192 softcap 30 sinks window 64,16 BHSD Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 192, bf16, window=(64, 16),
                       bhsd=True, sinks=True, softcap=30.0)),
        ("d192 f16 Sq=1 Sk=1000", backward_case(2, 4, 4, 1, 1000, 192,
                                                torch.float16)),
        # And past 192 (d224, d256: tiles of 256 columns, one Q and dO
        # buffer, 7 and 8 chunk pairs a column of warps).
        ("d224 causal GQA 4:1 B=2 Sq=Sk=1000",
         backward_case(2, 8, 2, 1000, 1000, 224, bf16, causal=True)),
        ("d224 f16 softcap 30 sinks Sq=17 Sk=1234",
         backward_case(1, 4, 4, 17, 1234, 224, torch.float16, sinks=True,
                       softcap=30.0)),
        ("d256 f16 BHSD Sq=Sk=4097",
         backward_case(1, 2, 2, 4097, 4097, 256, torch.float16, bhsd=True)),
        ("d256 window 64,16 MQA Sq=700 Sk=900",
         backward_case(1, 4, 1, 700, 900, 256, bf16, window=(64, 16))),
        # v's head dim apart from q's (DeepSeek's 192/128, and wider v).
        ("d192 dv128 causal GQA 4:1 B=2 Sq=Sk=1000",
         backward_case(2, 8, 2, 1000, 1000, 192, bf16, causal=True, dv=128)),
        ("d192 dv128 f16 BHSD Sq=17 Sk=113",
         backward_case(1, 2, 2, 17, 113, 192, torch.float16, bhsd=True,
                       dv=128)),
        ("d192 dv128 softcap 30 sinks causal Sq=300 Sk=700",
         backward_case(1, 4, 2, 300, 700, 192, bf16, causal=True, sinks=True,
                       softcap=30.0, dv=128)),
        ("d64 dv128 window 100,50 Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 64, bf16, window=(100, 50),
                       dv=128)),
        ("d96 dv64 Sq=Sk=4097", backward_case(1, 2, 2, 4097, 4097, 96, bf16,
                                             dv=64)),
        # The split head dim's columns shared out by whole blocks, one
        # consumer's GEMMs of other widths than the other's, on tiles of
        # 192 columns (d144 to d192, 128/192) or 256 (256/128); d200 and
        # 192/64 keep the tile's halves.
        ("d136 causal Sq=Sk=1000 (consumer 1's dK 8 columns)",
         backward_case(1, 2, 2, 1000, 1000, 136, bf16, causal=True)),
        ("d144 GQA 2:1 Sq=Sk=1000",
         backward_case(1, 4, 2, 1000, 1000, 144, bf16)),
        ("d176 causal Sq=777 Sk=1000",
         backward_case(1, 2, 2, 777, 1000, 176, bf16, causal=True)),
        ("d256 dv128 Sq=Sk=700",
         backward_case(1, 2, 2, 700, 700, 256, bf16, dv=128)),
        ("d128 dv192 causal Sq=Sk=1000",
         backward_case(1, 2, 2, 1000, 1000, 128, bf16, causal=True, dv=192)),
        ("d192 dv64 Sq=500 Sk=900",
         backward_case(1, 2, 2, 500, 900, 192, bf16, dv=64)),
        # On sm_90a, slices of a group's query heads in CTAs of their own
        # (hopper_backward_slices_groups: the C API's choice): at each
        # geometry, the split head dims' balanced one too.
        ("MQA causal d128 B=4 Sq=Sk=4096 (2 slices)",
         backward_case(4, 16, 1, 4096, 4096, 128, bf16, causal=True)),
        ("GQA 8:1 d64 f16 B=2 Sq=Sk=1000 (8 slices)",
         backward_case(2, 8, 1, 1000, 1000, 64, torch.float16)),
        ("d192 dv128 MQA causal B=2 Sq=Sk=1000 (sliced)",
         backward_case(2, 8, 1, 1000, 1000, 192, bf16, causal=True, dv=128)),
        ("d256 GQA 4:1 Sq=777 Sk=700 (sliced)",
         backward_case(1, 8, 2, 777, 700, 256, bf16)),
    ]:
        check("backward " + name, case)
    for name, case in [
        ("GQA 8:1 causal d128 B=2 Sq=333 Sk=1000",
         backward_case(2, 16, 2, 333, 1000, 128, bf16, causal=True,
                       deterministic=True)),
        ("window 100,50 d64 BHSD Sq=700 Sk=900",
         backward_case(1, 2, 2, 700, 900, 64, bf16, window=(100, 50),
                       bhsd=True, deterministic=True)),
        # On sm_90a the one-pass kernel with its adds in a fixed order:
        # more CTAs than SMs (each waits only for CTAs launched before
        # it), a window on either side (the order's count of the key
        # blocks that see a query block), rows without keys.
        ("GQA 4:1 window 300,0 causal d128 B=2 Sq=Sk=4096 (256 CTAs)",
         backward_case(2, 16, 4, 4096, 4096, 128, bf16, causal=True,
                       window=(300, 0), deterministic=True)),
        ("window 200,300 d64 B=2 H=16 Sq=1500 Sk=2500 (640 CTAs)",
         backward_case(2, 16, 16, 1500, 2500, 64, bf16, window=(200, 300),
                       deterministic=True)),
        ("causal d128 f16 Sq=1000 Sk=300 (rows without keys)",
         backward_case(1, 4, 4, 1000, 300, 128, torch.float16, causal=True,
                       deterministic=True)),
        ("by flashcore.attention's deterministic=True, GQA 4:1 d64 B=2 "
         "Sq=Sk=2048",
         backward_case(2, 16, 4, 2048, 2048, 64, bf16, deterministic=True,
                       asked="kwarg")),
        ("d96 GQA 4:1 causal B=2 Sq=Sk=1500",
         backward_case(2, 8, 2, 1500, 1500, 96, bf16, causal=True,
                       deterministic=True)),
        ("d40 f16 Sq=1000 Sk=700", backward_case(1, 4, 4, 1000, 700, 40,
                                                 torch.float16,
                                                 deterministic=True)),
        ("d192 window 100,50 Sq=Sk=1000",
         backward_case(1, 4, 4, 1000, 1000, 192, bf16, window=(100, 50),
                       deterministic=True)),
        ("d192 dv128 GQA 4:1 causal B=2 Sq=Sk=1500",
         backward_case(2, 8, 2, 1500, 1500, 192, bf16, causal=True, dv=128,
                       deterministic=True)),
        ("d160 f16 Sq=Sk=1000",
         backward_case(1, 4, 4, 1000, 1000, 160, torch.float16,
                       deterministic=True)),
        # The slices summed in their order: the same bits.
        ("GQA 8:1 causal d128 B=2 Sq=Sk=1000 (8 slices)",
         backward_case(2, 8, 1, 1000, 1000, 128, bf16, causal=True,
                       deterministic=True)),
    ]:
        check("backward deterministic " + name, case)


def eager_autograd_is_the_ops():
    """flashcore.attention's eager autograd node (_AttentionFunction)
    against the op's registered autograd on the same inputs, deterministic
    (the same bits), with sinks and the lse returned; and on the eager path
    too, a loss of the lse and a second derivative refused by name."""
    torch.manual_seed(0)
    q, k, v = (randn_bshd(2, heads, 333, 128, torch.bfloat16)
               for heads in (8, 2, 2))
    sinks = torch.randn(8, device="cuda")
    dout = torch.randn_like(q)

    def gradients(call):
        inputs = [t.detach().requires_grad_() for t in (q, k, v, sinks)]
        o, _ = call(*inputs)
        return torch.autograd.grad(o, inputs, dout), type(o.grad_fn).__name__
    eager, node = gradients(lambda q, k, v, s: flashcore.attention(
        q, k, v, causal=True, sinks=s, deterministic=True, return_lse=True))
    assert node == "_AttentionFunctionBackward", node
    op, op_node = gradients(lambda q, k, v, s: torch.ops.flashcore.attention
                            .default(q, k, v, True, None, None, True, 0.0, s,
                                     True))
    assert op_node != node, op_node
    for name, a, b in zip(("q", "k", "v", "sinks"), eager, op):
        assert torch.equal(a, b), f"d{name} differs from the op's"
    leaf = q.detach().requires_grad_()
    o, lse = flashcore.attention(leaf, k, v, return_lse=True)
    try:
        (o.sum() + lse.sum()).backward()
        raise AssertionError("a loss of the lse was accepted")
    except NotImplementedError as e:
        assert "detach" in str(e), e
    dq, = torch.autograd.grad(flashcore.attention(leaf, k, v).sum(), leaf,
                              create_graph=True)
    try:
        dq.sum().backward()
        raise AssertionError("a second derivative was accepted")
    except NotImplementedError as e:
        assert "second derivative" in str(e), e
    return f"{node}: the op's bits; lse loss, second derivative refused"


def hopper_backward_takes_a_workspace():
    """With sm_90a's kernels the backward adds dq into a workspace
    (FlashAttention-3's one-pass kernel), deterministic or not: the C
    API's rule (fmhaAttentionBackwardUsesWorkspace) as autograd asks it.
    A wrong answer would still be correct, only slower, which no gradient
    check sees."""
    capi = flashcore._capi
    if torch.cuda.get_device_capability() != (9, 0) or capi.chip_override():
        return "not sm_90a's kernels on compute capability 9.0: not asked"
    for d in (64, 96, 128, 256):
        for deterministic in (0, 1):
            desc = capi.AttentionBackwardDesc()
            desc.forward.headDim = d
            desc.deterministic = deterministic
            assert flashcore._ops._backward_uses_workspace(0, desc), \
                (d, deterministic)
    return "d64, d96, d128, d256, deterministic or not"


def hopper_backward_slices_groups():
    """With sm_90a's kernels the backward slices a group's query heads
    where its CTAs (one per key block of a KV head) would leave SMs idle:
    the C API's fastest workspace has room for the slices' f32 dk and dv
    after the dq accumulator, for the larger count of the two one-pass
    kernels' orders (MQA 4 x 4096 x 16:1 causal: 8 slices on 132 SMs, the
    ordered kernel's, where the other takes 2; 8 heads a KV head over 1000
    keys: 8), and none where the CTAs fill
    the GPU (the same MQA without the mask: one even wave) or there are no
    groups. Without it the gradients would still be right, only slower."""
    capi = flashcore._capi
    if torch.cuda.get_device_capability() != (9, 0) or capi.chip_override():
        return "not sm_90a's kernels on compute capability 9.0: not asked"
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def slices(b, hq, hkv, s, d, causal):
        desc = capi.AttentionBackwardDesc()
        f = desc.forward
        f.headDim, f.causal = d, causal
        f.batch, f.queryHeads, f.kvHeads, f.querySeq, f.keySeq = \
            b, hq, hkv, s, s
        least, fastest = ctypes.c_size_t(), ctypes.c_size_t()
        capi.call(capi.lib().fmhaAttentionBackwardWorkspaceSize,
                  ctypes.addressof(desc), ctypes.byref(least))
        capi.call(capi.lib().fmhaAttentionBackwardFastestWorkspaceSize,
                  capi.jit(0), ctypes.addressof(desc), ctypes.byref(fastest))
        if fastest.value == least.value:
            return 1
        partials = fastest.value - (least.value + 15) // 16 * 16
        one = b * hkv * s * 2 * d * 4
        assert partials % one == 0, (partials, one)
        return partials // one

    rows = [((4, 16, 1, 4096, 128, 1), 8), ((4, 16, 1, 4096, 128, 0), 1),
            ((2, 8, 1, 1000, 64, 0), 8), ((4, 16, 16, 4096, 128, 1), 1)]
    if sms != 132:
        return f"{sms} SMs, the model's rows are for 132: not asked"
    for sizes, expected in rows:
        got = slices(*sizes)
        assert got == expected, (sizes, got, expected)
    return "MQA 4x4096x16:1 causal 8, 8 heads over 1000 keys 8, " \
        "non-causal MQA and MHA 1"


def merge_case(dtype, pieces):
    """Attention over all the keys from flashcore.attention over pieces of
    them and flashcore.merge_attention (context parallelism's merge), with
    an empty piece's state (zeros, lse +inf) among them, against torch."""
    def run():
        b, sq, hq, hkv, d = 2, 300, 8, 2, 128
        sizes = [700, 1, 1299][:pieces]
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, sum(sizes), hkv, d, device="cuda",
                            dtype=torch.bfloat16) for _ in range(2))
        outs, lses, start = [], [], 0
        for size in sizes:
            o, lse = flashcore.attention(q, k[:, start:start + size],
                                         v[:, start:start + size],
                                         return_lse=True)
            outs.append(o.to(dtype))
            lses.append(lse)
            start += size
        outs.append(torch.zeros_like(outs[0]))  # a state without keys
        lses.append(torch.full_like(lses[0], float("inf")))
        o, lse = flashcore.merge_attention(torch.stack(outs),
                                           torch.stack(lses))
        ref, ref_lse = reference(q, k, v, False, None, None, torch.float32)
        low, _ = reference(q, k, v, False, None, None, torch.bfloat16)
        error = (o.float() - ref).abs().max().item()
        bound = 2 * (low - ref).abs().max().item() + 1e-3
        assert o.dtype == dtype and o.shape == q.shape, (o.dtype, o.shape)
        assert error <= bound, f"max |o - ref| {error:.2e} > {bound:.2e}"
        lse_error = (lse - ref_lse).abs().max().item()
        assert lse_error <= 2e-3, f"max |lse - ref| {lse_error:.2e}"
        return f"err {error:.1e} (bound {bound:.1e}), lse err {lse_error:.1e}"
    return run


def causal_capture_replays(q, k, v, scale):
    """flashcore.attention(q, k, v, causal, scale, with the LSE), prepared
    before, captured in a CUDA graph (which refuses to compile) and
    replayed on new inputs, against the reference."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, lse = flashcore.attention(q, k, v, causal=True, scale=scale,
                                     return_lse=True)
    for t in (q, k, v):
        t.copy_(torch.randn_like(t))
    graph.replay()
    torch.cuda.synchronize()
    ref, ref_lse = reference(q, k, v, True, None, scale, torch.float32)
    low, _ = reference(q, k, v, True, None, scale, torch.bfloat16)
    error = (o.float() - ref).abs().max().item()
    assert error <= 2 * (low - ref).abs().max().item() + 1e-3, error
    assert (lse - ref_lse).abs().max().item() <= 2e-3
    return f"replayed, err {error:.1e}"


def split_decode_captures():
    """A decode call that splits its keys, prepared by flashcore.precompile
    and captured in a CUDA graph: its workspace comes from the graph's
    pool, and nothing compiles."""
    q = torch.randn(1, 1, 16, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 20000, 4, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    flashcore.precompile(flashcore.attention, q, k, v, causal=True,
                         scale=0.07, return_lse=True)
    return causal_capture_replays(q, k, v, 0.07)


def packed_decode_captures():
    """A few queries of GQA 8:1 heads over a long cache (on sm_90a the
    group's heads packed into one tile, the keys split), prepared by
    flashcore.precompile_attention with the heads and every query length,
    captured in a CUDA graph: nothing compiles."""
    q = torch.randn(1, 4, 32, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 30000, 4, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    flashcore.precompile_attention([dict(
        dtype=torch.bfloat16, head_dim=128, causal=True, scale=0.05,
        return_lse=True, num_heads=32, num_heads_k=4)])
    return causal_capture_replays(q, k, v, 0.05)


def kvcache_decode_captures():
    """A split-KV decode over KV caches, prepared by flashcore.precompile
    and captured in a CUDA graph, replayed with new lengths written into
    the captured cache_seqlens (as a decode loop does)."""
    q = torch.randn(2, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 65536, 8, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    n = torch.tensor([100, 100], dtype=torch.int32, device="cuda")
    flashcore.precompile(flashcore.attention_with_kvcache, q, k, v, n,
                         causal=True, return_lse=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, lse = flashcore.attention_with_kvcache(q, k, v, n, causal=True,
                                                  return_lse=True)
    n.copy_(torch.tensor([50000, 1], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    ref, ref_lse = reference_kvcache(q, k, v, n, True, None, None,
                                     torch.float32)
    low, _ = reference_kvcache(q, k, v, n, True, None, None, torch.bfloat16)
    return "replayed, " + compare_attention(q, o, lse, ref, ref_lse, low)


def opcheck():
    q = torch.randn(2, 128, 4, 64, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 200, 2, 64, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.flashcore.attention.default,
                          (q, k, k, True, None, None, True))
    cu = torch.tensor([0, 100, 256], dtype=torch.int32, device="cuda")
    torch.library.opcheck(torch.ops.flashcore.attention_varlen.default,
                          (q.flatten(0, 1), k.flatten(0, 1)[:256],
                           k.flatten(0, 1)[:256], cu, cu, 156, True, None,
                           None, True))
    n = torch.tensor([150, 7], dtype=torch.int32, device="cuda")
    torch.library.opcheck(torch.ops.flashcore.attention_with_kvcache.default,
                          (q, k, k, n, True, None, None, True))
    pool = torch.randn(26, 16, 2, 64, device="cuda", dtype=torch.bfloat16)
    table = torch.randperm(26, device="cuda").view(2, 13).to(torch.int32)
    torch.library.opcheck(torch.ops.flashcore.attention_with_kvcache.default,
                          (q, pool, pool, n, True, None, None, True, 0.0,
                           None, table))
    targets = torch.sort(torch.rand(2, 40, device="cuda") * 10, dim=1).values
    times = torch.cumsum(torch.rand(2, 30, device="cuda"), dim=1)
    values = torch.randn(2, 30, 8, device="cuda")
    torch.library.opcheck(torch.ops.flashcore.resample.default,
                          (targets, [times], [values], None, "linear"))
    outs = torch.randn(3, 2, 16, 4, 64, device="cuda")
    lses = torch.randn(3, 2, 4, 16, device="cuda")
    torch.library.opcheck(torch.ops.flashcore.merge_attention.default,
                          (outs, lses))


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, s, dim = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, -1).unbind(2)
        return self.out(flashcore.attention(q, k, v, causal=True)
                        .reshape(b, s, dim))


def compiled_block():
    torch._dynamo.reset()
    block = Block(1024, 8).cuda().to(torch.bfloat16)
    x = torch.randn(4, 512, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        eager = block(x)
        compiled = torch.compile(block, fullgraph=True)(x)
    error = (compiled.float() - eager.float()).abs().max().item()
    assert error <= 2e-2, f"compiled vs eager max error {error}"
    return f"max diff vs eager {error:.1e}"


def graph_capture(warm):
    def run():
        q = torch.randn(2, 600, 8, 128, device="cuda", dtype=torch.float16)
        k = torch.randn(2, 900, 2, 128, device="cuda", dtype=torch.float16)
        v = torch.randn_like(k)
        scale = 0.11 if warm == "precompile" else 0.12  # a kernel of its own
        if warm == "precompile":
            flashcore.precompile(flashcore.attention, q, k, v, causal=True,
                                 scale=scale, return_lse=True)
        else:
            flashcore.attention(q, k, v, causal=True, scale=scale,
                                return_lse=True)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o, lse = flashcore.attention(q, k, v, causal=True, scale=scale,
                                         return_lse=True)
        for _ in range(2):  # new inputs each replay
            for t in (q, k, v):
                t.copy_(torch.randn_like(t))
            graph.replay()
            torch.cuda.synchronize()
            ref, ref_lse = reference(q, k, v, True, None, scale, torch.float32)
            low, _ = reference(q, k, v, True, None, scale, torch.float16)
            error = (o.float() - ref).abs().max().item()
            assert error <= 2 * (low - ref).abs().max().item() + 1e-3, error
            assert (lse - ref_lse).abs().max().item() <= 2e-3
        return f"2 replays, err {error:.1e}"
    return run


def capture_refuses_to_compile():
    q = torch.randn(1, 64, 2, 64, device="cuda", dtype=torch.bfloat16)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            # A scale no call has used: its kernel is not loaded.
            flashcore.attention(q, q, q, scale=0.123456)
    except flashcore.NotLoadedError as e:
        assert "flashcore.precompile" in str(e), str(e)
        return "NotLoadedError: " + str(e)[:80]
    raise AssertionError("a capture compiled a kernel")


def precompiled_variant_captures():
    """precompile_attention without seqlen_q prepares every query-length
    class: sm_90a's causal d64 has a tile of its own from 4k queries, and
    one query launches the non-causal kernel."""
    flashcore.precompile_attention(
        [dict(dtype=torch.float16, head_dim=64, causal=True, scale=0.2)],
        threads=2)
    k = torch.randn(1, 300, 2, 64, device="cuda", dtype=torch.float16)
    for sq, hq in ((100, 2), (5000, 2), (1, 8)):  # and GQA decode
        q = torch.randn(1, sq, hq, 64, device="cuda", dtype=torch.float16)
        kv = q if sq == 5000 else k
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            o = flashcore.attention(q, kv, kv, causal=True, scale=0.2)
        graph.replay()
        torch.cuda.synchronize()
        ref, _ = reference(q, kv, kv, True, None, 0.2, torch.float32)
        assert (o.float() - ref).abs().max().item() < 2e-2
    return "Sq=100, Sq=5000 and GQA decode captured without a compile"


def two_processes_one_entry():
    """Two processes compiling the same kernel at once into one disk cache
    both succeed and leave one entry: a whole-program cubin (ELF), not
    PTX."""
    code = ("import torch, flashcore; flashcore.precompile_attention("
            "[dict(dtype=torch.bfloat16, head_dim=128, scale=0.3, "
            "seqlen_q=1000)], threads=1)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FMHA_CACHE_DIR": cache}
        runs = [subprocess.Popen([sys.executable, "-c", code], env=env,
                                 stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        for run in runs:
            _, err = run.communicate()
            assert run.returncode == 0, err
        entries = [f for f in os.listdir(cache) if f.endswith(".fmhac")]
        assert len(entries) == 1, os.listdir(cache)
        data = open(os.path.join(cache, entries[0]), "rb").read()
        assert b"\x7fELF" in data, "the entry holds no ELF image"
        assert b".target sm_" not in data, "the entry holds PTX"
    return "2 processes, 1 entry, an ELF cubin"


def shipped_kernel_needs_no_compile():
    """A fresh process with an empty disk cache runs a kernel the wheel
    ships (fmha-seed's) without compiling it."""
    code = ("import time, torch, flashcore\n"
            "q = torch.randn(1, 1000, 8, 128, device='cuda', "
            "dtype=torch.bfloat16)\n"
            "torch.cuda.synchronize(); t = time.perf_counter()\n"
            "flashcore.attention(q, q, q, causal=True)\n"
            "torch.cuda.synchronize(); print(time.perf_counter() - t)\n")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "FMHA_CACHE_DIR": cache,
               "CUDA_CACHE_DISABLE": "1"}
        run = subprocess.run([sys.executable, "-c", code], env=env,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        seconds = float(run.stdout.split()[-1])
        # A compile takes about a second here; a load, milliseconds.
        assert seconds < 0.2, f"first call {seconds:.3f} s: compiled?"
        assert not os.listdir(cache), "compiled into the user's cache"
    return f"first call {seconds * 1e3:.1f} ms, nothing compiled"


def torch_resample(times, values, lengths, targets, mode):
    """fmha.resample's semantics (FmhaOps.td) in float32, one stream."""
    b, s = times.shape
    n = (lengths.long() if lengths is not None
         else torch.full((b,), s, device=times.device))
    count = torch.minimum(torch.searchsorted(times, targets, right=True),
                          n[:, None])
    last = (n - 1).clamp_min(0)[:, None]
    i0 = (count - 1).clamp(min=0)
    i0 = torch.minimum(i0, last)
    i1 = torch.minimum(count, last)
    t0, t1 = times.gather(1, i0), times.gather(1, i1)
    x = values.float()
    d = x.shape[2]
    v0 = x.gather(1, i0[..., None].expand(-1, -1, d))
    v1 = x.gather(1, i1[..., None].expand(-1, -1, d))
    if mode == "previous":
        out = v0
    elif mode == "nearest":
        out = torch.where(((targets - t0) <= (t1 - targets))[..., None], v0, v1)
    else:
        w = ((targets - t0) / (t1 - t0)).nan_to_num(0.0).clamp(0, 1)
        out = v0 + w[..., None] * (v1 - v0)
    # Before the first sample i0 = i1 = 0, after the last valid one both are
    # n - 1: the edge sample's value in every mode.
    return torch.where((n == 0)[:, None, None], torch.zeros_like(out), out)


def resample_case(mode, dtype, with_lengths):
    def run():
        b, t = 5, 300
        streams = [(120, 8), (37, 4), (500, 16)]
        times = [torch.cumsum(torch.rand(b, s, device="cuda") + 0.01, dim=1)
                 for s, _ in streams]
        values = [torch.randn(b, s, d, device="cuda", dtype=dtype)
                  for s, d in streams]
        lengths = ([torch.randint(0, s + 1, (b,), device="cuda",
                                  dtype=torch.int32) for s, _ in streams]
                   if with_lengths else None)
        end = max(x[:, -1].max().item() for x in times)
        targets = torch.sort(torch.rand(b, t, device="cuda") * end * 1.1 - 1,
                             dim=1).values
        out = flashcore.resample(targets, times, values, lengths, mode=mode)
        ref = torch.cat([torch_resample(times[i], values[i],
                                        lengths[i] if lengths else None,
                                        targets, mode)
                         for i in range(len(streams))], dim=2)
        tol = {torch.float32: 1e-5, torch.float16: 2e-3,
               torch.bfloat16: 1.6e-2}[dtype]
        error = ((out.float() - ref).abs() / (1 + ref.abs())).max().item()
        assert out.shape == (b, t, 28) and out.dtype == dtype
        assert error <= tol, f"max relative error {error:.2e} > {tol}"
        return f"err {error:.1e}"
    return run


def bad_input():
    q = torch.randn(1, 64, 4, 64, device="cuda", dtype=torch.float16)
    cases = [
        (lambda: flashcore.attention(q, q, q, softcap=-1.0),
         "softcap is -1.000000e+00, expected a positive finite value"),
        (lambda: flashcore.attention(q, q.cpu(), q), "k is on cpu and q on cuda:0"),
        (lambda: flashcore.attention(q, q.float(), q), "k is torch.float32"),
        (lambda: flashcore.attention(q[..., :52], q[..., :52], q[..., :52]),
         "headDim is 52, expected a multiple of 8 from 32 to 256"),
        (lambda: flashcore.attention(q, q[:, :, :3], q[:, :, :3]),
         "queryHeads (Hq) 4 and kvHeads (Hkv) 3"),
        (lambda: flashcore.attention(q.view(-1)[4:4 + q.numel() - 256]
                                     .view(1, 63, 4, 64), q, q),
         "expected a 16-byte aligned address"),
    ]
    for call, expected in cases:
        try:
            call()
        except flashcore.InvalidArgumentError as e:
            assert expected in str(e), f"{expected!r} not in {e}"
            continue
        raise AssertionError(f"no error for {expected!r}")
    return f"{len(cases)} errors, each naming the value"


def main():
    print(flashcore.doctor(), flush=True)
    attention_grid()
    kvcache_grid()
    paged_kvcache_grid()
    varlen_grid()
    backward_grid()
    check("backward: the eager autograd node is the op's",
          eager_autograd_is_the_ops)
    check("backward: a dq workspace with sm_90a's kernels",
          hopper_backward_takes_a_workspace)
    check("backward: sm_90a slices the groups that leave SMs idle",
          hopper_backward_slices_groups)
    check("opcheck attention, attention_with_kvcache, attention_varlen, "
          "merge_attention and resample", opcheck)
    check("torch.compile(fullgraph=True) block, inductor", compiled_block)
    check("CUDA graph capture after flashcore.precompile",
          graph_capture("precompile"))
    check("CUDA graph capture after a warm-up call", graph_capture("warm-up"))
    check("capture refuses to compile", capture_refuses_to_compile)
    check("precompile_attention: every query-length class",
          precompiled_variant_captures)
    check("split-KV decode captured after flashcore.precompile",
          split_decode_captures)
    check("kvcache split-KV decode captured after flashcore.precompile, "
          "new lengths replayed", kvcache_decode_captures)
    check("packed GQA Sq=4 split-KV captured after precompile_attention "
          "with the heads", packed_decode_captures)
    for dtype in (torch.float32, torch.bfloat16):
        for pieces in (2, 3):
            check(f"merge_attention {str(dtype)[6:]} of {pieces} key pieces "
                  "and an empty state", merge_case(dtype, pieces))
    check("two processes compile one kernel into one cache entry",
          two_processes_one_entry)
    check("a kernel the wheel ships loads without a compile",
          shipped_kernel_needs_no_compile)
    for mode in ("linear", "nearest", "previous"):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            for with_lengths in (False, True):
                check(f"resample {mode} {str(dtype)[6:]} 3 streams"
                      f"{' lengths' if with_lengths else ''}",
                      resample_case(mode, dtype, with_lengths))
    check("bad CUDA input", bad_input)
    return print_table("python_check")


if __name__ == "__main__":
    sys.exit(main())
