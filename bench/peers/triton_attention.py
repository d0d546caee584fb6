"""A compact FlashAttention-2-style forward kernel in Triton: the `triton`
peer of ../shared/ANCHORS.md (autotuned over 8 configurations). Written for
FlashCore's benchmarks; BHSD layout, causal bottom-right aligned."""

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
    for bm, bn, w, s in [
        (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 4),
        (128, 32, 4, 4), (64, 128, 4, 3), (128, 128, 8, 2), (64, 32, 4, 5),
    ]
]


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m,
            offs_d, start, end, n_q, n_k, qk_scale,
            BLOCK_N: tl.constexpr, MASK_TAIL: tl.constexpr,
            MASK_CAUSAL: tl.constexpr):
    for start_n in range(start, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_base + offs_n[None, :] * stride_kn + offs_d[:, None],
                    mask=offs_n[None, :] < n_k, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        if MASK_TAIL:
            qk = tl.where(offs_n[None, :] < n_k, qk, float("-inf"))
        if MASK_CAUSAL:
            visible = offs_n[None, :] <= offs_m[:, None] + n_k - n_q
            qk = tl.where(visible, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(qk - m_safe[:, None])
        alpha = tl.math.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :],
                    mask=offs_n[:, None] < n_k, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=CONFIGS, key=["HEAD_DIM", "CAUSAL"])
@triton.jit
def _attention_forward(Q, K, V, O, sm_scale, stride_qb, stride_qh, stride_qm,
                       stride_kb, stride_kh, stride_kn, stride_vb, stride_vh,
                       stride_vn, stride_ob, stride_oh, stride_om, heads,
                       kv_group, n_q, n_k, HEAD_DIM: tl.constexpr,
                       CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    kv_h = h // kv_group
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :], mask=offs_m[:, None] < n_q, other=0.0)
    k_base = K + b * stride_kb + kv_h * stride_kh
    v_base = V + b * stride_vb + kv_h * stride_vh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        # Blocks wholly below the diagonal need no mask; the rest do.
        diagonal = start_m * BLOCK_M + n_k - n_q
        unmasked_end = tl.maximum(0, (diagonal // BLOCK_N) * BLOCK_N)
        end = tl.minimum(n_k, (start_m + 1) * BLOCK_M + n_k - n_q)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn,
                                stride_vn, offs_m, offs_d, 0, unmasked_end,
                                n_q, n_k, qk_scale, BLOCK_N, False, False)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn,
                                stride_vn, offs_m, offs_d, unmasked_end, end,
                                n_q, n_k, qk_scale, BLOCK_N, True, True)
    else:
        full_end = (n_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn,
                                stride_vn, offs_m, offs_d, 0, full_end, n_q,
                                n_k, qk_scale, BLOCK_N, False, False)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn,
                                stride_vn, offs_m, offs_d, full_end, n_k, n_q,
                                n_k, qk_scale, BLOCK_N, True, False)
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(O + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om
             + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=offs_m[:, None] < n_q)


def attention(q, k, v, causal, scale=None):
    """q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D], contiguous in D."""
    batch, heads, n_q, dim = q.shape
    n_k = k.shape[2]
    o = torch.empty_like(q)
    scale = scale if scale is not None else dim ** -0.5
    grid = lambda meta: (triton.cdiv(n_q, meta["BLOCK_M"]), batch * heads)
    _attention_forward[grid](
        q, k, v, o, scale, q.stride(0), q.stride(1), q.stride(2), k.stride(0),
        k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2),
        o.stride(0), o.stride(1), o.stride(2), heads, heads // k.shape[1],
        n_q, n_k, HEAD_DIM=dim, CAUSAL=causal)
    return o
