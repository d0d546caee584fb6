"""The torch oracle of the GPU checks (python_check.py, aot_backward.py):
attention by its definition in fmha.attention's terms (FmhaOps.td), over
KV caches filled to per-sequence lengths, and FlashAttention's criterion
for gradients."""

import math

import torch


def reference(q, k, v, causal, window, scale, dtype, softcap=0.0,
              sinks=None):
    """Attention on [B, S, H, D] tensors computed in dtype (float32: the
    oracle; the inputs' dtype: torch's own rounding, the error bound's
    yardstick), with the op's masks, softcap and sinks ([Hq] float32
    logits in each row's denominator; FmhaOps.td). Returns o and lse."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    qh = q.transpose(1, 2).to(dtype)
    kh = k.transpose(1, 2).repeat_interleave(hq // hkv, dim=1).to(dtype)
    vh = v.transpose(1, 2).repeat_interleave(hq // hkv, dim=1).to(dtype)
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    s = (qh @ kh.transpose(-1, -2)).float() * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    i = torch.arange(sq, device=q.device)[:, None] + (sk - sq)
    j = torch.arange(sk, device=q.device)[None, :]
    visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    if causal:
        visible &= j <= i
    if window is not None:
        visible &= (j >= i - window[0]) & (j <= i + window[1])
    s = s.masked_fill(~visible, float("-inf"))
    if sinks is None:
        lse = torch.logsumexp(s, dim=-1)
    else:
        sink = sinks.float().view(1, hq, 1, 1).expand(b, hq, sq, 1)
        lse = torch.logsumexp(torch.cat([s, sink], dim=-1), dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    o = (p.to(dtype) @ vh).float()
    if sinks is None:
        lse = torch.where(visible.any(-1), lse,
                          torch.full_like(lse, math.inf))
    return o.transpose(1, 2), lse


def compare_attention(q, o, o_lse, ref, ref_lse, low):
    """o (q's shape with v's head dim, like q where they agree) within twice
    the error of the same math in q's dtype (low) against the float32
    oracle ref, plus 1e-3; o_lse (None: not returned) +inf where ref_lse is
    and within 2e-3 of it elsewhere. Returns the errors as text."""
    error = (o.float() - ref).abs().max().item()
    bound = 2 * (low - ref).abs().max().item() + 1e-3
    assert o.shape == (*q.shape[:-1], ref.shape[-1]), (o.shape, ref.shape)
    if o.shape == q.shape:
        assert o.stride() == q.stride(), (o.stride(), q.stride())
    assert error <= bound, f"max |o - ref| {error:.2e} > bound {bound:.2e}"
    detail = f"err {error:.1e} (bound {bound:.1e})"
    if o_lse is not None:
        finite = torch.isfinite(ref_lse)
        assert torch.equal(torch.isfinite(o_lse), finite), "lse +inf rows"
        lse_error = (o_lse[finite] - ref_lse[finite]).abs().max().item() \
            if finite.any() else 0.0
        assert lse_error <= 2e-3, f"max |lse - ref| {lse_error:.2e}"
        detail += f", lse err {lse_error:.1e}"
    return detail


def reference_kvcache(q, k_cache, v_cache, cache_seqlens, causal, window,
                      scale, dtype, softcap=0.0, sinks=None):
    """reference() of each batch entry b over the first cache_seqlens[b]
    keys of its k_cache and v_cache (flash_attn_with_kvcache's lengths,
    clamped to [0, seqlen_cache]), the masks aligned to that length's end;
    the positions past it are never read. An entry without keys gets zeros
    and lse +inf (with sinks: the sink's logit). Returns o and lse."""
    outs, lses = [], []
    for b, n in enumerate(cache_seqlens.tolist()):
        n = min(max(n, 0), k_cache.shape[1])
        o, lse = reference(q[b:b + 1], k_cache[b:b + 1, :n],
                           v_cache[b:b + 1, :n], causal, window, scale, dtype,
                           softcap, sinks)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


def reference_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, causal, window,
                     scale, dtype, softcap=0.0, sinks=None):
    """reference() of each packed sequence b (rows cu_seqlens_q[b] to
    cu_seqlens_q[b + 1] of q, [total_q, Hq, D]; likewise of k and v), the
    masks aligned per sequence (flash_attn_varlen_func). Returns o
    [total_q, Hq, D] and lse [Hq, total_q] (rows outside every sequence:
    NaN)."""
    o = torch.full((*q.shape[:-1], v.shape[-1]), float("nan"),
                   device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), float("nan"), device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        rows = slice(cq[b], cq[b + 1])
        keys = slice(ck[b], ck[b + 1])
        o_b, lse_b = reference(q[None, rows], k[None, keys], v[None, keys],
                               causal, window, scale, dtype, softcap, sinks)
        o[rows] = o_b[0]
        lse[:, rows] = lse_b[0]
    return o, lse


def reference_gradients(q, k, v, dout, causal, window, scale, dtype,
                        sinks=None, softcap=0.0):
    """dq, dk, dv (and dsinks, with sinks) of reference() computed in dtype
    (sinks in float32), by torch's autograd."""
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    if sinks is not None:
        leaves.append(sinks.detach().float().requires_grad_())
    o, _ = reference(*leaves[:3], causal, window, scale, dtype, softcap,
                     sinks=leaves[3] if sinks is not None else None)
    return torch.autograd.grad(o, leaves, dout.to(o.dtype))


def check_gradients(got, q, k, v, dout, causal, window, scale, sinks=None,
                    softcap=0.0):
    """FlashAttention's criterion: each of dq, dk, dv within twice the error
    of the same math in the inputs' dtype against the float32 oracle (plus
    1e-3 of its largest value and 1e-4, for gradients that are zero in
    exact arithmetic). Returns the errors and bounds as text; raises
    AssertionError naming the first gradient past its bound."""
    exact = reference_gradients(q, k, v, dout, causal, window, scale,
                                torch.float32, sinks, softcap)
    low = list(reference_gradients(q, k, v, dout, causal, window, scale,
                                   q.dtype, sinks, softcap))
    slack = [torch.zeros(1)] * 4
    if sinks is not None:
        # dsinks by flashcore's own math (-sum exp(sink - lse) *
        # rowsum(dout * o)) on the inputs' dtype's o and lse: autograd's
        # low-precision dsinks takes another path (rowsum(dP * P) with P
        # in float32), no yardstick for the rounding of o that flashcore's
        # carries (it failed the bound now and then: 6.1e-04 > 3.9e-04).
        o, lse = reference(q, k, v, causal, window, scale, q.dtype, softcap,
                           sinks=sinks)
        products = dout.float() * o.to(q.dtype).float()
        weights = torch.exp(sinks.float().view(1, -1, 1) - lse)
        low[3] = -(weights * products.sum(-1).transpose(1, 2)).sum((0, 2))
        # flashcore's o is rounded on its own, independently of the
        # reference's: twice one rounding's error is no bound for another's
        # (it failed in 3 of 60 simulated runs, and now and then on the
        # GPU: 9.0e-03 > 6.8e-03). Each element's rounding is uniform
        # within half an ulp (standard deviation eps / (2 sqrt 3) of it),
        # so dsinks moves by a sum of independent terms: four of its
        # standard deviations join the bound (no failure in 120 simulated
        # runs, errors at most 0.3 of it).
        sigma = torch.finfo(q.dtype).eps / (2 * math.sqrt(3)) * \
            (weights ** 2 * (products ** 2).sum(-1).transpose(1, 2)) \
            .sum((0, 2)).sqrt()
        slack[3] = 4 * sigma
    details = []
    names = ["q", "k", "v"] + (["sinks"] if sinks is not None else [])
    for name, g, e, l, extra in zip(names, got, exact, low, slack):
        error = (g.float() - e).abs().max().item()
        bound = 2 * (l.float() - e).abs().max().item() + \
            1e-3 * e.abs().max().item() + 1e-4 + extra.max().item()
        assert error <= bound, \
            f"max |d{name} - ref| {error:.2e} > bound {bound:.2e}"
        details.append(f"d{name} {error:.1e}/{bound:.1e}")
    return ", ".join(details)
