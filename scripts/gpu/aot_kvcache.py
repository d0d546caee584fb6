"""fmha-aot's attention launchers over KV caches on the GPU (sinks,
per-sequence key lengths, paged caches, packed query heads, key splits
and their merge_attention, packed variable-length sequences, their keys
split too), against torch per sequence (torch_reference.reference_kvcache,
reference_varlen).

Each LIB is a shared object of the generated fmha_aot_kv.c and
aot_kvcache_shim.c (scripts/gpu/aot.sh builds them from .gpu/aot/); every
kernel it holds runs on fresh random inputs: GQA and MQA, one query and a
few, prefill, lengths 0, 1, a page's and the whole cache; a paged cache's
pages in shuffled order, its spare pages and the positions past each
length NaN (none may reach o or lse). o and lse start as NaN, so a value
left unwritten fails. One line per check, a table last; exit 0 when all
pass.

Usage (GPU machine): python3 scripts/gpu/aot_kvcache.py LIB...
(AOT_KVCACHE_SMALL=1: one small shape, for compute-sanitizer)
"""

import ctypes
import os
import sys

import torch

import aot_shim
from aot_shim import (DTYPES, Strides1, Strides2, Strides3, Strides4,
                      Strides5, bhsd_strides, launched)
from check_table import check
from torch_reference import (compare_attention, reference_kvcache,
                             reference_varlen)


class Args(ctypes.Structure):
    """fmha_aot_kv_attention_args (fmha_kernels.h)."""
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("q", "k", "v", "o", "lse")] + \
        [(name, ctypes.c_int64) for name in
         ("batch", "q_heads", "kv_heads", "q_seq", "k_seq")] + \
        [("q_strides", Strides4), ("k_strides", Strides4),
         ("v_strides", Strides4), ("o_strides", Strides4),
         ("lse_strides", Strides3)] + \
        [(name, ctypes.c_void_p) for name in
         ("sinks", "key_lengths", "page_table")] + \
        [("pages", ctypes.c_int64), ("pages_per_sequence", ctypes.c_int64),
         ("sinks_strides", Strides2), ("key_lengths_strides", Strides1),
         ("page_table_strides", Strides2), ("splits", ctypes.c_int64)] + \
        [(name, ctypes.c_void_p) for name in
         ("query_offsets", "key_offsets")] + \
        [("max_query_length", ctypes.c_int64),
         ("query_offsets_strides", Strides1),
         ("key_offsets_strides", Strides1)]




class MergeArgs(ctypes.Structure):
    """fmha_aot_kv_merge_attention_args (fmha_kernels.h)."""
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("outs", "lses", "o", "lse")] + \
        [(name, ctypes.c_int64) for name in
         ("states", "batch", "heads", "q_seq")] + \
        [("outs_strides", Strides5), ("lses_strides", Strides4),
         ("o_strides", Strides4), ("lse_strides", Strides3),
         ("query_offsets", ctypes.c_void_p), ("sequences", ctypes.c_int64),
         ("query_offsets_strides", Strides1)]


def prepare(lib):
    for name in ("shim_sinks", "shim_key_lengths", "shim_page_size",
                 "shim_split_keys", "shim_query_offsets"):
        getattr(lib, name).argtypes = [ctypes.c_int]
    lib.shim_launch.argtypes = [ctypes.c_int, ctypes.POINTER(Args),
                                ctypes.c_void_p]
    lib.shim_launch_merge.argtypes = [ctypes.c_int, ctypes.POINTER(MergeArgs),
                                      ctypes.c_void_p]


def paged(caches, page_size):
    """caches [B, S, H, D] as pools of page_size-row pages in one shuffled
    order, each with 3 spare NaN pages, and the table [B, S / page_size]
    int32 that finds a sequence's pages in them."""
    b, s, h, d = caches[0].shape
    count = b * s // page_size
    order = torch.randperm(count, device="cuda")
    pools = []
    for cache in caches:
        spare = torch.full((3, page_size, h, d), float("nan"), device="cuda",
                           dtype=cache.dtype)
        pages = cache.reshape(count, page_size, h, d)[order]
        pools.append(torch.cat([pages, spare]))
    table = torch.argsort(order).to(torch.int32).view(b, s // page_size)
    return pools, table


def launch_merge(lib, merge, outs, lses, o, o_strides, lse, stream,
                 offsets=None):
    """merge (a merge_attention kernel) of the states outs [S, B, H, Sq, D]
    and lses [S, B, H, Sq] (views) into o (its [B, H, Sq, D] strides
    o_strides) and lse; with offsets (int32 [N + 1]), over those packed
    sequences' rows only."""
    m = MergeArgs()
    m.outs, m.outs_strides = outs.data_ptr(), Strides5(*outs.stride())
    m.lses, m.lses_strides = lses.data_ptr(), Strides4(*lses.stride())
    m.o, m.o_strides = o.data_ptr(), o_strides
    if lse is not None:
        m.lse, m.lse_strides = lse.data_ptr(), Strides3(*lse.stride())
    m.states, m.batch, m.heads, m.q_seq = outs.shape[:4]
    if offsets is not None:
        m.query_offsets, m.sequences = offsets.data_ptr(), offsets.numel() - 1
        m.query_offsets_strides = Strides1(1)
    launched(lib.shim_launch_merge(merge, ctypes.byref(m), stream), lib)


def kv_case(lib, k, info, b, hq, hkv, sq, s_cache, lengths, merge=None,
            splits=3):
    """Kernel k on one problem; with merge (a merge_attention kernel),
    k writes the partial states of `splits` key splits into a workspace,
    which merge combines into o and lse."""
    def run():
        dtype, d = DTYPES[info.dtype], info.head_dim
        causal = bool(info.causal)
        page_size = lib.shim_page_size(k)
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=dtype)
        k_cache = torch.randn(b, s_cache, hkv, d, device="cuda", dtype=dtype)
        v_cache = torch.randn_like(k_cache)
        n = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        stale = torch.arange(s_cache, device="cuda") >= n[:, None]
        for t in (k_cache, v_cache):
            t.masked_fill_(stale[:, :, None, None], float("nan"))
        sinks = torch.randn(hq, device="cuda") if lib.shim_sinks(k) else None
        o = torch.full_like(q, float("nan"))
        lse = torch.full((b, hq, sq), float("nan"), device="cuda") \
            if info.lse else None
        a = Args()
        k_in, v_in = k_cache, v_cache
        if page_size:
            (k_in, v_in), table = paged((k_cache, v_cache), page_size)
            a.page_table = table.data_ptr()
            a.page_table_strides = Strides2(*table.stride())
            a.pages = k_in.shape[0]
            a.pages_per_sequence = table.shape[1]
        for name, t in (("q", q), ("k", k_in), ("v", v_in), ("o", o)):
            setattr(a, name, t.data_ptr())
            setattr(a, name + "_strides", Strides4(*bhsd_strides(t)))
        if lse is not None:
            a.lse, a.lse_strides = lse.data_ptr(), Strides3(*lse.stride())
        if sinks is not None:
            # gpt-oss's one sink per head: a row stride of 0.
            a.sinks, a.sinks_strides = sinks.data_ptr(), Strides2(1, 0)
        if lib.shim_key_lengths(k):
            a.key_lengths = n.data_ptr()
            a.key_lengths_strides = Strides1(1)
        a.batch, a.q_heads, a.kv_heads, a.q_seq, a.k_seq = \
            b, hq, hkv, sq, s_cache
        stream = torch.cuda.current_stream().cuda_stream
        if merge is None:
            launched(lib.shim_launch(k, ctypes.byref(a), stream), lib)
        else:
            # The splits' states, dense [S x B, Hq, Sq, D] and [S x B, Hq,
            # Sq], NaN where a split leaves one unwritten.
            parts = torch.full((splits * b, hq, sq, d), float("nan"),
                               device="cuda", dtype=dtype)
            part_lses = torch.full((splits * b, hq, sq), float("nan"),
                                   device="cuda")
            a.o, a.o_strides = parts.data_ptr(), Strides4(*parts.stride())
            a.lse = part_lses.data_ptr()
            a.lse_strides = Strides3(*part_lses.stride())
            a.splits = splits
            launched(lib.shim_launch(k, ctypes.byref(a), stream), lib)
            launch_merge(lib, merge, parts.view(splits, b, hq, sq, d),
                         part_lses.view(splits, b, hq, sq), o,
                         Strides4(*bhsd_strides(o)), lse, stream)
        torch.cuda.synchronize()
        assert not o.isnan().any(), "o has NaN: unwritten, or a stale key read"
        ref, ref_lse = reference_kvcache(q, k_cache, v_cache, n, causal, None,
                                         info.scale, torch.float32,
                                         sinks=sinks)
        low, _ = reference_kvcache(q, k_cache, v_cache, n, causal, None,
                                   info.scale, dtype, sinks=sinks)
        return compare_attention(q, o, lse, ref, ref_lse, low)
    return run


def packed_strides(t):
    """[total, H, D] (or [S, total, H, D]: S entries) viewed as [1, H,
    total, D] (as [S, H, total, D])."""
    s = t.stride()
    if t.dim() == 3:
        return Strides4(t.shape[0] * s[0], s[1], s[0], s[2])
    return Strides4(s[0], s[2], s[1], s[3])


def varlen_case(lib, k, info, hq, hkv, query_lengths, key_lengths,
                merge=None, splits=3):
    """Kernel k over sequences of query_lengths and key_lengths packed
    without padding (q, k and v [1, H, total, D] from [total, H, D]); o's
    5 rows past the last sequence start as NaN and must stay so. With
    merge (a merge_attention kernel with query_offsets), k writes the
    states of `splits` splits of each sequence's keys into a NaN-filled
    workspace, which merge combines over the sequences' rows."""
    def run():
        dtype, d = DTYPES[info.dtype], info.head_dim
        cq = torch.tensor([0] + query_lengths, device="cuda").cumsum(0)
        ck = torch.tensor([0] + key_lengths, device="cuda").cumsum(0)
        total_q, total_k = int(cq[-1]) + 5, int(ck[-1])
        q = torch.randn(total_q, hq, d, device="cuda", dtype=dtype)
        k_, v = (torch.randn(total_k, hkv, d, device="cuda", dtype=dtype)
                 for _ in range(2))
        o = torch.full_like(q, float("nan"))
        lse = torch.full((1, hq, total_q), float("nan"), device="cuda")
        cq32, ck32 = cq.to(torch.int32), ck.to(torch.int32)
        a = Args()
        # The splits' states: [S, total, H, D] and [S, H, total].
        parts = torch.full((splits, *o.shape), float("nan"), device="cuda",
                           dtype=dtype) if merge is not None else o
        part_lses = torch.full((splits, hq, total_q), float("nan"),
                               device="cuda") if merge is not None else lse
        for name, t in (("q", q), ("k", k_), ("v", v), ("o", parts)):
            setattr(a, name, t.data_ptr())
            setattr(a, name + "_strides", packed_strides(t))
        a.lse = part_lses.data_ptr()
        a.lse_strides = Strides3(*part_lses.stride())
        if merge is not None:
            a.splits = splits
        a.query_offsets, a.key_offsets = cq32.data_ptr(), ck32.data_ptr()
        a.query_offsets_strides, a.key_offsets_strides = Strides1(1), \
            Strides1(1)
        a.max_query_length = max(query_lengths)
        a.batch, a.q_heads, a.kv_heads = len(query_lengths), hq, hkv
        a.q_seq, a.k_seq = total_q, total_k
        stream = torch.cuda.current_stream().cuda_stream
        launched(lib.shim_launch(k, ctypes.byref(a), stream), lib)
        if merge is not None:
            # [S, total, H, D] as [S, 1, H, total, D]; [S, H, total] as
            # [S, 1, H, total].
            launch_merge(lib, merge, parts.unsqueeze(1).transpose(2, 3),
                         part_lses.unsqueeze(1), o, packed_strides(o), lse,
                         stream, cq32)
        torch.cuda.synchronize()
        rows = int(cq[-1])
        ref, ref_lse = reference_varlen(q, k_, v, cq, ck, bool(info.causal),
                                        None, info.scale, torch.float32)
        low, _ = reference_varlen(q, k_, v, cq, ck, bool(info.causal), None,
                                  info.scale, dtype)
        assert not o[:rows].isnan().any(), "o has rows left unwritten"
        assert o[rows:].isnan().all(), "o's rows past the sequences written"
        return compare_attention(q[:rows], o[:rows], lse[0, :, :rows],
                                 ref[:rows], ref_lse[:, :rows], low[:rows])
    return run


VARLEN = [  # query lengths, key lengths (0 and 1 included)
    ([0, 1, 77, 300, 5], [5, 1, 200, 300, 0]),
]


SHAPES = [  # b, hq, hkv, sq, s_cache, lengths
    (4, 32, 8, 1, 4096, [0, 1, 64, 4096]),
    (4, 32, 8, 4, 2048, [3, 64, 1000, 2048]),
    (2, 8, 1, 300, 1024, [300, 1024]),
]


def get_shapes():
    """SHAPES, or with AOT_KVCACHE_SMALL set (under compute-sanitizer) a
    small one."""
    if os.environ.get("AOT_KVCACHE_SMALL"):
        return [(2, 8, 2, 4, 256, [5, 256])]
    return SHAPES


def find_merge(lib, k):
    """The merge_attention kernel of split_keys kernel k's module (with
    query_offsets where k has them), or None where k does not split."""
    if not lib.shim_split_keys(k):
        return None
    offsets = lib.shim_query_offsets(k)
    return next(m for m in range(lib.shim_num_kernels())
                if lib.shim_kernel(m).contents.op == b"merge_attention" and
                lib.shim_query_offsets(m) == offsets)


def check_kernel(lib, arch, k, info):
    if info.op != b"attention":
        return  # a merge runs after its split kernel
    merge = find_merge(lib, k)
    if lib.shim_query_offsets(k):
        for query_lengths, key_lengths in VARLEN:
            check(f"{arch} {info.name.decode()}"
                  f"{' + merge' if merge is not None else ''} GQA 8:2 "
                  f"queries {query_lengths} keys {key_lengths}",
                  varlen_case(lib, k, info, 8, 2, query_lengths,
                              key_lengths, merge))
        return
    for b, hq, hkv, sq, s_cache, lengths in get_shapes():
        name = (f"{arch} {info.name.decode()}"
                f"{' + merge' if merge is not None else ''} B={b} Hq={hq} "
                f"Hkv={hkv} Sq={sq} S_cache={s_cache}")
        check(name, kv_case(lib, k, info, b, hq, hkv, sq, s_cache, lengths,
                            merge))


if __name__ == "__main__":
    sys.exit(aot_shim.main("aot_kvcache", prepare, check_kernel))
