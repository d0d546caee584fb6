"""fmha-aot's attention_grad launchers on the GPU, against torch's float32
autograd with FlashAttention's criterion (torch_reference.py).

Each LIB is a shared object of the generated fmha_aot_grad.c and
aot_grad_shim.c (scripts/gpu/aot.sh builds them from .gpu/aot/); every
kernel it holds runs on fresh random inputs: GQA, MQA, Sq != Sk in both
directions (rows that see no key), one query, lengths up to 4097, BSHD and
BHSD. Outputs and scratch (delta, dq_accum) start as NaN (dq_order's
counters as garbage), so a value the kernels leave unwritten fails; a
deterministic kernel (no dq_accum, or dq_order's ordered adds) must give
the same bits twice. The forward's o and lse come from the float32
reference. One line per check, a table last; exit 0 when all pass.

Usage (GPU machine): python3 scripts/gpu/aot_backward.py LIB...
(AOT_BACKWARD_SMALL=1: one small shape, for compute-sanitizer)
"""

import ctypes
import os
import sys

import torch

import aot_shim
from aot_shim import (DTYPES, Strides3, Strides4, bhsd_strides,
                      launched)
from check_table import check
from torch_reference import check_gradients, reference


class GradArgs(ctypes.Structure):
    """fmha_aot_grad_attention_grad_args (fmha_kernels.h)."""
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("q", "k", "v", "o", "dout", "lse", "dq", "dk", "dv",
                 "delta", "dq_accum")] + \
        [(name, ctypes.c_int64) for name in
         ("batch", "q_heads", "kv_heads", "q_seq", "k_seq")] + \
        [("q_strides", Strides4), ("k_strides", Strides4),
         ("v_strides", Strides4), ("o_strides", Strides4),
         ("dout_strides", Strides4), ("lse_strides", Strides3),
         ("dq_strides", Strides4), ("dk_strides", Strides4),
         ("dv_strides", Strides4), ("delta_strides", Strides3),
         ("dq_accum_strides", Strides4), ("dq_order", ctypes.c_void_p),
         ("dq_order_strides", Strides3)]


def launch(lib, k, info, q, k_, v, o, lse, dout, bhsd):
    """dq, dk, dv of kernel k, written into tensors laid out as q, k, v."""
    b, sq, hq, d = q.shape
    sk, hkv = k_.shape[1], k_.shape[2]
    nan = float("nan")

    def like(t):
        if bhsd:
            return torch.full(t.transpose(1, 2).shape, nan, device="cuda",
                              dtype=t.dtype).transpose(1, 2)
        return torch.full_like(t, nan)

    dq, dk, dv = like(q), like(k_), like(v)
    delta = torch.full((b, hq, sq), nan, device="cuda")
    accum = torch.full((b, hq, sq, d), nan, device="cuda") \
        if info.dq_accum else None
    # Scratch too: counters far from the 0 the first kernel writes.
    order = torch.full((b, hq, -(-sq // lib.shim_dq_order_rows())), -12345,
                       device="cuda", dtype=torch.int32) \
        if info.dq_order else None
    a = GradArgs()
    for name, t in (("q", q), ("k", k_), ("v", v), ("o", o), ("dout", dout),
                    ("dq", dq), ("dk", dk), ("dv", dv)):
        setattr(a, name, t.data_ptr())
        setattr(a, name + "_strides", Strides4(*bhsd_strides(t)))
    a.lse, a.lse_strides = lse.data_ptr(), Strides3(*lse.stride())
    a.delta, a.delta_strides = delta.data_ptr(), Strides3(*delta.stride())
    if accum is not None:
        a.dq_accum = accum.data_ptr()
        a.dq_accum_strides = Strides4(*accum.stride())
    if order is not None:
        a.dq_order = order.data_ptr()
        a.dq_order_strides = Strides3(*order.stride())
    a.batch, a.q_heads, a.kv_heads, a.q_seq, a.k_seq = b, hq, hkv, sq, sk
    launched(lib.shim_launch(k, ctypes.byref(a),
                             torch.cuda.current_stream().cuda_stream), lib)
    torch.cuda.synchronize()
    return dq, dk, dv


def grad_case(lib, k, info, b, hq, hkv, sq, sk, bhsd):
    def run():
        dtype, d = DTYPES[info.dtype], info.head_dim
        dv = info.value_head_dim
        causal = bool(info.causal)
        window = tuple(info.window) if info.has_window else None
        scale = info.scale

        def make(heads, seq, dim=d):
            if bhsd:
                return torch.randn(b, heads, seq, dim, device="cuda",
                                   dtype=dtype).transpose(1, 2)
            return torch.randn(b, seq, heads, dim, device="cuda",
                               dtype=dtype)
        q, k_, v = make(hq, sq), make(hkv, sk), make(hkv, sk, dv)
        dout = make(hq, sq, dv)
        o32, lse = reference(q, k_, v, causal, window, scale, torch.float32)
        o = o32.to(dtype)
        lse = lse.contiguous()
        got = launch(lib, k, info, q, k_, v, o, lse, dout, bhsd)
        for name, g in zip("qkv", got):
            assert not g.isnan().any(), f"d{name} has values left unwritten"
        if not info.dq_accum or info.dq_order:
            again = launch(lib, k, info, q, k_, v, o, lse, dout, bhsd)
            for name, g, g2 in zip("qkv", got, again):
                assert torch.equal(g, g2), \
                    f"d{name} differs between two runs of a deterministic " \
                    "kernel"
        return check_gradients(got, q, k_, v, dout, causal, window, scale)
    return run


SHAPES = [  # b, hq, hkv, sq, sk, bhsd
    (2, 8, 2, 333, 1000, False),
    (1, 2, 2, 17, 113, True),
    (1, 4, 1, 1000, 17, False),
    (3, 8, 2, 1, 1000, False),
    (1, 2, 2, 4097, 4097, False),
]


def get_shapes():
    """SHAPES, or with AOT_BACKWARD_SMALL set (under compute-sanitizer) the
    small one."""
    if os.environ.get("AOT_BACKWARD_SMALL"):
        return [shape for shape in SHAPES if shape[3] == 17]
    return SHAPES


def prepare(lib):
    lib.shim_launch.argtypes = [ctypes.c_int, ctypes.POINTER(GradArgs),
                                ctypes.c_void_p]


def check_kernel(lib, arch, k, info):
    for b, hq, hkv, sq, sk, bhsd in get_shapes():
        name = (f"{arch} {info.name.decode()} B={b} Hq={hq} Hkv={hkv}"
                f" Sq={sq} Sk={sk}{' bhsd' if bhsd else ''}")
        check(name, grad_case(lib, k, info, b, hq, hkv, sq, sk, bhsd))


if __name__ == "__main__":
    sys.exit(aot_shim.main("aot_backward", prepare, check_kernel))
