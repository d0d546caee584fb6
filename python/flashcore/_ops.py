"""flashcore's torch operators: flashcore::attention (and its backward,
flashcore::attention_backward), flashcore::attention_with_kvcache,
flashcore::attention_varlen, flashcore::merge_attention and
flashcore::resample.

Each op has a schema, a CUDA implementation that launches FlashCore's kernel
on torch's current stream with outputs from torch's allocator, a fake
implementation (shapes only, for torch.compile and meta tensors), and an
autograd rule. Eager calls on CUDA tensors that need no gradient skip the
dispatcher and call the CUDA implementation directly (the same function), so
that a call costs what the C API costs plus the Python around it.
"""

import ctypes
import struct
import threading
from typing import NamedTuple

import torch

from . import _capi

_ATTENTION_DTYPES = {torch.bfloat16: _capi.BF16, torch.float16: _capi.F16}
_RESAMPLE_DTYPES = {torch.bfloat16: _capi.BF16, torch.float16: _capi.F16,
                    torch.float32: _capi.F32}

_lib = torch.library.Library("flashcore", "DEF")
_lib.define("attention(Tensor q, Tensor k, Tensor v, bool causal=False, "
            "int[]? window=None, float? scale=None, bool return_lse=False, "
            "float softcap=0.0, Tensor? sinks=None, "
            "bool deterministic=False) -> (Tensor, Tensor)")
_lib.define("attention_with_kvcache(Tensor q, Tensor k_cache, Tensor v_cache, "
            "Tensor? cache_seqlens=None, bool causal=False, "
            "int[]? window=None, float? scale=None, bool return_lse=False, "
            "float softcap=0.0, Tensor? sinks=None, "
            "Tensor? page_table=None) -> (Tensor, Tensor)")
_lib.define("attention_varlen(Tensor q, Tensor k, Tensor v, "
            "Tensor cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, "
            "bool causal=False, int[]? window=None, float? scale=None, "
            "bool return_lse=False, float softcap=0.0, Tensor? sinks=None, "
            "Tensor? seqused_k=None, Tensor? page_table=None, "
            "SymInt? max_seqlen_k=None) -> (Tensor, Tensor)")
_lib.define("attention_backward(Tensor dout, Tensor q, Tensor k, Tensor v, "
            "Tensor o, Tensor lse, bool causal=False, int[]? window=None, "
            "float? scale=None, float softcap=0.0, bool deterministic=False) "
            "-> (Tensor, Tensor, Tensor)")
_lib.define("merge_attention(Tensor outs, Tensor lses) -> (Tensor, Tensor)")
_lib.define("resample(Tensor targets, Tensor[] times, Tensor[] values, "
            "Tensor[]? lengths=None, str mode='linear') -> Tensor")


def _fail(what):
    raise _capi.InvalidArgumentError(what)


def _check_tensor(name, t, op):
    if not isinstance(t, torch.Tensor):
        _fail(f"{op}: {name} is a {type(t).__name__}, expected a torch.Tensor")


def _check_device(names, tensors, op):
    """Every tensor on the first one's device, a CUDA (or, for shape
    inference, meta) device."""
    device = tensors[0].device
    if device.type not in ("cuda", "meta"):
        _fail(f"{op}: {names[0]} is on {device}, expected a CUDA device "
              "(FlashCore's kernels run on NVIDIA GPUs; move the tensors "
              "with .cuda())")
    for name, t in zip(names[1:], tensors[1:]):
        if t.device != device:
            _fail(f"{op}: {name} is on {t.device} and {names[0]} on "
                  f"{device}, expected one device")


def _check_window(window, op):
    if window is not None and (
            not isinstance(window, (tuple, list)) or len(window) != 2 or
            any(not isinstance(w, int) or w < 0 for w in window)):
        _fail(f"{op}: window is {window}, expected (left, right), two "
              "non-negative ints (None: no window)")


_ATTENTION = "flashcore.attention"
_KVCACHE = "flashcore.attention_with_kvcache"
_VARLEN = "flashcore.attention_varlen"


class _Sequences(NamedTuple):
    """Where each sequence's rows are, beyond one batch entry each of q,
    k and v. A KV cache's (flashcore.attention_with_kvcache): the key
    counts, a [batch] int32 tensor, and the page table, a [batch, pages
    per sequence] int32 tensor. Packed sequences'
    (flashcore.attention_varlen): the [batch + 1] int32 offsets of their
    queries and keys, the longest one's query count (an int) and its key
    count (an int; 0: unknown). None (0) without."""
    seqlens: object = None
    page_table: object = None
    cu_seqlens_q: object = None
    cu_seqlens_k: object = None
    max_seqlen_q: object = 0
    max_seqlen_k: object = 0

# How each attention op names its q, k and v in its errors.
_QKV_NAMES = {_ATTENTION: ("q", "k", "v"),
              _KVCACHE: ("q", "k_cache", "v_cache"),
              _VARLEN: ("q", "k", "v")}


def _check_attention(q, k, v, window, sinks=None, sequences=None, op=_ATTENTION):
    """The checks the C API cannot make: what the tensors are, where, of
    which dtype, and the sizes its descriptor has one of (batch, head dim;
    sinks: the query heads; sequences (a _Sequences): the batch).
    Head counts, lengths, strides, alignment and the head dim itself are
    checked by the C API, whose message the error carries."""
    names = _QKV_NAMES[op]
    _, kn, vn = names
    for name, t in zip(names, (q, k, v)):
        _check_tensor(name, t, op)
        if t.dim() != 4:
            _fail(f"{op}: {name} has {t.dim()} dimensions "
                  f"{tuple(t.shape)}, expected 4: [batch, seq, heads, "
                  "head_dim]")
    _check_device(names, (q, k, v), op)
    if q.dtype not in _ATTENTION_DTYPES:
        _fail(f"{op}: q is {q.dtype}, expected torch.float16 or "
              "torch.bfloat16")
    for name, t in ((kn, k), (vn, v)):
        if t.dtype != q.dtype:
            _fail(f"{op}: {name} is {t.dtype} and q {q.dtype}, expected "
                  "one dtype")
    # v's head dim may differ from q's and k's (DeepSeek's 192 and 128).
    if k.shape[:3] != v.shape[:3]:
        _fail(f"{op}: {kn} is {tuple(k.shape)} and {vn} "
              f"{tuple(v.shape)}, expected one shape but for the head_dim")
    paged = sequences is not None and sequences.page_table is not None
    if k.shape[3] != q.shape[3] or (not paged and k.shape[0] != q.shape[0]):
        _fail(f"{op}: q is {tuple(q.shape)} and {kn} {tuple(k.shape)}, "
              "expected the same batch and head_dim ([batch, seq, heads, "
              "head_dim])")
    for name, t in zip(names, (q, k, v)):
        if t.stride(3) != 1 and t.shape[3] > 1:
            _fail(f"{op}: {name}'s head_dim has stride {t.stride(3)}, "
                  "expected 1 (a dense last dimension; FlashCore does not "
                  "copy: pass .contiguous())")
    _check_window(window, op)
    if sinks is not None:
        _check_tensor("sinks", sinks, op)
        _check_device(("q", "sinks"), (q, sinks), op)
        if sinks.dtype != torch.float32 or sinks.shape != (q.shape[2],) or \
                not sinks.is_contiguous():
            _fail(f"{op}: sinks is {sinks.dtype} {tuple(sinks.shape)}, "
                  f"expected a contiguous torch.float32 ({q.shape[2]},): one "
                  "logit per query head")
    if sequences is not None:
        _check_sequences(q, sequences, op)


def _check_sequences(q, sequences, op):
    """The checks of a _Sequences' key counts, page table and offsets."""
    seqlens, table, cu_q, cu_k, max_q, max_k = sequences
    batch = q.shape[0]
    if cu_q is not None:
        _check_offsets(q, cu_q, cu_k, max_q, max_k, table, op)
        batch = cu_q.shape[0] - 1
    # FlashAttention's names: cache_seqlens for a KV cache, seqused_k beside
    # packed sequences.
    name = "seqused_k" if op == _VARLEN else "cache_seqlens"
    if seqlens is not None:
        _check_int32_vector(q, name, seqlens, seqlens.shape == (batch,),
                            f"({batch},): one key count per batch entry", op)
    if table is not None:
        _check_tensor("page_table", table, op)
        _check_device(("q", "page_table"), (q, table), op)
        if table.dtype != torch.int32 or table.dim() != 2 or \
                table.shape[0] != batch or table.shape[1] < 1:
            _fail(f"{op}: page_table is {table.dtype} "
                  f"{tuple(table.shape)}, expected torch.int32 ({batch}, "
                  "pages per sequence >= 1): one row of page numbers per "
                  "batch entry")
        if not table.is_contiguous():
            _fail(f"{op}: page_table has strides {table.stride()}, "
                  "expected a contiguous tensor (FlashCore does not copy: "
                  "pass .contiguous())")


def _check_int32_vector(q, name, t, sized, expected, op):
    """t (the op's argument `name`) is a dense int32 vector on q's device
    whose size is right where `sized`; `expected` says which shape."""
    _check_tensor(name, t, op)
    _check_device(("q", name), (q, t), op)
    if t.dtype != torch.int32 or not sized:
        _fail(f"{op}: {name} is {t.dtype} {tuple(t.shape)}, expected "
              f"torch.int32 {expected}")
    if t.stride(0) != 1 and t.shape[0] > 1:
        _fail(f"{op}: {name} has stride {t.stride(0)}, expected 1 (a dense "
              "vector; FlashCore does not copy: pass .contiguous())")


def _check_offsets(q, cu_q, cu_k, max_q, max_k, table, op):
    """Packed sequences' offsets ([batch + 1] int32, dense, on q's device:
    the keys' without a page table, none with one) and their longest query
    and key counts (the keys' 0 where not given)."""
    if (cu_k is None) == (table is None):
        _fail(f"{op}: cu_seqlens_k is "
              f"{'None' if cu_k is None else 'given'} and page_table "
              f"{'None' if table is None else 'given'}, expected one of them: "
              "the keys packed as the queries are, or in pages")
    for name, t in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
        if t is not None:
            _check_int32_vector(q, name, t, t.dim() == 1 and t.shape[0] >= 1,
                                "(batch + 1,): the first row of each "
                                "sequence, then the total", op)
    if cu_k is not None and cu_q.shape != cu_k.shape:
        _fail(f"{op}: cu_seqlens_q is {tuple(cu_q.shape)} and cu_seqlens_k "
              f"{tuple(cu_k.shape)}, expected one shape (batch + 1,)")
    if not isinstance(max_q, (int, torch.SymInt)) or \
            isinstance(max_q, bool) or max_q < 1:
        _fail(f"{op}: max_seqlen_q is {max_q!r}, expected an int >= 1 (the "
              "most queries a sequence has, which sizes the grid)")
    if not isinstance(max_k, (int, torch.SymInt)) or \
            isinstance(max_k, bool) or max_k < 0:
        _fail(f"{op}: max_seqlen_k is {max_k!r}, expected None or an int >= "
              "0 (the most keys a sequence has, by which decode splits its "
              "keys)")


def _empty_output(q, v, device=None):
    """The uninitialized o of attention on q and v: q's shape with v's head
    dim, on q's device (or `device`). torch.empty_like(q) where the head dims
    agree; otherwise dense, or a dense [batch, heads, seq, head_dim]'s
    transpose where q is one (BHSD)."""
    dv = v.shape[-1]
    if dv == q.shape[-1]:
        return torch.empty_like(q, device=device)
    options = dict(dtype=q.dtype, device=q.device if device is None else device)
    if q.dim() == 4 and not q.is_contiguous() and \
            q.transpose(1, 2).is_contiguous():
        b, s, h, _ = q.shape
        return torch.empty((b, h, s, dv), **options).transpose(1, 2)
    return torch.empty((*q.shape[:-1], dv), **options)


def _attention_outputs(q, v, return_lse):
    b, sq, hq, _ = q.shape
    o = _empty_output(q, v)
    if return_lse:
        lse = torch.empty((b, hq, sq), dtype=torch.float32, device=q.device)
    else:
        lse = torch.empty((0,), dtype=torch.float32, device=q.device)
    return o, lse


class _CallState(threading.local):
    """Per-thread buffers of a call: the packed descriptor and the message
    slot, made once per thread."""

    def __init__(self):
        self.desc = ctypes.create_string_buffer(_capi.ATTENTION_DESC.size)
        self.desc_address = ctypes.addressof(self.desc)
        self.message = ctypes.c_void_p()
        self.message_ref = ctypes.byref(self.message)


_state = _CallState()
_raw_stream = torch._C._cuda_getCurrentRawStream if hasattr(
    torch._C, "_cuda_getCurrentRawStream") else None


# torch.cuda.is_current_stream_capturing without its Python frame.
_capturing = torch._C._cuda_isCurrentStreamCapturing if hasattr(
    torch._C, "_cuda_isCurrentStreamCapturing") else (lambda: False)


def _pack_attention(q, k, v, pointers, o_strides, causal, window, scale,
                    softcap, sinks=None, sequences=None):
    """Packs the descriptor of q, k, v (FlashAttention's [B, S, H, D], any
    strides with a dense head dim; with a page table, k and v [pages, page
    size, H, D]; packed sequences, [1, total, H, D]) and an output o of
    o_strides into this thread's buffer; pointers are q, k, v, o and lse
    (0: none). The optional tensors, sinks and those of sequences (a
    _Sequences), get stand-in addresses (_fill_attention_desc writes
    theirs)."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    seqlens, table, cu_q, cu_k, max_q, max_k = \
        sequences if sequences is not None else _Sequences()
    pages = page_size = 0
    if table is not None:
        pages, page_size = k.shape[0], k.shape[1]
        sk = table.shape[1] * page_size
    if cu_q is not None:
        b = cu_q.shape[0] - 1
    qs, ks, vs, os_ = q.stride(), k.stride(), v.stride(), o_strides
    left, right = window if window is not None else (0, 0)
    _capi.ATTENTION_DESC.pack_into(
        _state.desc, 0,
        _ATTENTION_DTYPES[q.dtype], d, 1 if causal else 0,
        0.0 if scale is None else scale, 0 if window is None else 1,
        left, right, b, hq, hkv, sq, sk, *pointers,
        qs[0], qs[2], qs[1], ks[0], ks[2], ks[1], vs[0], vs[2], vs[1],
        os_[0], os_[2], os_[1], hq * sq, sq, 1, softcap, _stand_in(sinks), 0,
        0, _stand_in(seqlens), _stand_in(table), pages, page_size,
        _stand_in(cu_q), _stand_in(cu_k), max_q,
        0 if v.shape[3] == d else v.shape[3], max_k)


# Descriptors less their pointers, by what they are packed from: a call
# whose tensors have the sizes, strides, dtypes and devices of an earlier
# one, and its attributes, reuses that call's checks and packing (and the
# workspace size it asked for) and only writes its pointers. Cleared when
# full.
_templates = {}
_MAX_TEMPLATES = 4096
_POINTERS = struct.Struct("=5Q")  # q, k, v, o, lse: consecutive in the desc
_POINTERS_OFFSET = _capi.AttentionDesc.q.offset
_POINTER = struct.Struct("=Q")  # sinks, then _Sequences' tensors
_SINKS_OFFSET = _capi.AttentionDesc.sinks.offset
# Where each tensor of a _Sequences goes, in its order.
_SEQUENCES_OFFSETS = (_capi.AttentionDesc.keyLengths.offset,
                      _capi.AttentionDesc.pageTable.offset,
                      _capi.AttentionDesc.queryOffsets.offset,
                      _capi.AttentionDesc.keyOffsets.offset)
_WORKSPACE = struct.Struct("=2Q")  # workspace, workspaceBytes
_WORKSPACE_OFFSET = _capi.AttentionDesc.workspace.offset


def _workspace_bytes(device):
    """fmhaAttentionWorkspaceSize of this thread's descriptor: the bytes
    with which a decode call splits its keys, 0 where it would not."""
    size = ctypes.c_size_t()
    _capi.call(_capi.lib().fmhaAttentionWorkspaceSize, _capi.jit(device),
               _state.desc_address, ctypes.byref(size))
    return size.value


def _signature(t):
    """What the checks and the descriptor read of an optional tensor (an
    int: itself)."""
    if t is None or not isinstance(t, torch.Tensor):
        return t
    return (t.shape, t.stride(), t.dtype, t.get_device())


def _fill_attention_desc(q, k, v, o_ptr, lse_ptr, causal, window, scale,
                         softcap, sinks, sequences=None, op=_ATTENTION):
    """Fills this thread's descriptor for q, k, v and o = _empty_output(q, v)
    at o_ptr (and lse at lse_ptr, 0: none), without a workspace; checks once
    per signature. Returns the bytes of workspace with which the call splits
    its keys (0: no split)."""
    key = (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(),
           q.dtype, k.dtype, v.dtype, q.get_device(), k.get_device(),
           v.get_device(), causal, window, scale, softcap, lse_ptr != 0,
           _signature(sinks),
           None if sequences is None else tuple(map(_signature, sequences)))
    template = _templates.get(key)
    if template is None:
        _check_attention(q, k, v, window, sinks, sequences, op)
        o_strides = _empty_output(q, v, device="meta").stride()
        _pack_attention(q, k, v, (0, 0, 0, 0, 0), o_strides, causal, window,
                        scale, softcap, sinks, sequences)
        # Decode, and a few queries of packed GQA heads, split their keys.
        workspace = _workspace_bytes(q.get_device())
        template = (_state.desc.raw, workspace)
        if len(_templates) >= _MAX_TEMPLATES:
            _templates.clear()
        _templates[key] = template
    else:
        ctypes.memmove(_state.desc_address, template[0], len(template[0]))
    _POINTERS.pack_into(_state.desc, _POINTERS_OFFSET, q.data_ptr(),
                        k.data_ptr(), v.data_ptr(), o_ptr, lse_ptr)
    if sinks is not None:
        _POINTER.pack_into(_state.desc, _SINKS_OFFSET, sinks.data_ptr())
    if sequences is not None:
        for offset, t in zip(_SEQUENCES_OFFSETS, sequences):
            if isinstance(t, torch.Tensor):
                _POINTER.pack_into(_state.desc, offset, t.data_ptr())
    return template[1]


_attention_ex = None


def _run_attention(q, k, v, o_ptr, lse_ptr, causal, window, scale, softcap,
                   sinks, flags, sequences=None, op=_ATTENTION):
    """fmhaAttentionEx on the current stream of q's device, o being
    _empty_output(q, v) at o_ptr. A call that splits its keys gets
    its workspace from torch's allocator on that stream (inside CUDA graph
    capture too, from the graph's pool)."""
    global _attention_ex
    if window is not None and type(window) is not tuple:
        _check_window(window, op)
        window = tuple(window)
    workspace_bytes = _fill_attention_desc(q, k, v, o_ptr, lse_ptr, causal,
                                           window, scale, softcap, sinks,
                                           sequences, op)
    workspace = None
    if workspace_bytes:
        # A prepare-only call reads the size alone.
        if not flags & _capi.CALL_PREPARE_ONLY:
            workspace = torch.empty(workspace_bytes, dtype=torch.uint8,
                                    device=q.device)
        _WORKSPACE.pack_into(_state.desc, _WORKSPACE_OFFSET,
                             0 if workspace is None else workspace.data_ptr(),
                             workspace_bytes)
    if _attention_ex is None:
        _attention_ex = _capi.lib().fmhaAttentionEx
    device = q.device.index
    state = _state
    status = _attention_ex(_capi.jit(device), state.desc_address,
                           _raw_stream(device), flags, state.message_ref)
    if status:
        _capi.raise_for(status, state.message)


# Aligned stand-ins for the addresses of tensors that have none (fake and
# meta tensors): fmhaAttentionCheck reads sizes and strides, not memory.
_STAND_IN = 1 << 12


def _stand_in(t):
    """The stand-in address of optional tensor t: 0 for None."""
    return 0 if t is None else _STAND_IN


def _check_with_capi(q, k, v, causal, window, scale, return_lse, softcap,
                     sinks, sequences=None):
    """fmhaAttentionCheck on the sizes and strides alone (head dim, head
    ratio, lengths, strides), so that a traced call fails where a run
    would. Symbolic sizes are left to the run."""
    sizes = (*q.shape, *k.shape, *q.stride(), *k.stride(), *v.stride())
    for t in sequences or ():
        sizes += tuple(t.shape) if isinstance(t, torch.Tensor) else (t,)
    if not all(isinstance(x, int) for x in sizes if x is not None):
        return
    o_strides = _empty_output(q, v, device="meta").stride()
    _pack_attention(q, k, v, (_STAND_IN,) * 4 +
                    ((_STAND_IN,) if return_lse else (0,)), o_strides,
                    causal, window, scale, softcap, sinks, sequences)
    state = _state
    status = _capi.lib().fmhaAttentionCheck(state.desc_address,
                                            state.message_ref)
    if status:
        _capi.raise_for(status, state.message)


# deterministic (flashcore::attention's) is for its backward: the forward's
# bits are the same every run.
def _attention_impl(q, k, v, causal=False, window=None, scale=None,
                    return_lse=False, softcap=0.0, sinks=None,
                    deterministic=False, sequences=None, op=_ATTENTION):
    _check_attention(q, k, v, window, sinks, sequences, op)
    o, lse = _attention_outputs(q, v, return_lse)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    _run_attention(q, k, v, o.data_ptr(), lse.data_ptr() if return_lse else 0,
                   causal, window, scale, softcap, sinks, flags, sequences, op)
    return o, lse


def _attention_fake(q, k, v, causal=False, window=None, scale=None,
                    return_lse=False, softcap=0.0, sinks=None,
                    deterministic=False, sequences=None, op=_ATTENTION):
    _check_attention(q, k, v, window, sinks, sequences, op)
    _check_with_capi(q, k, v, causal, window, scale, return_lse, softcap,
                     sinks, sequences)
    return _attention_outputs(q, v, return_lse)


def _setup_attention(ctx, inputs, output):
    q, k, v, causal, window, scale, _, softcap, sinks, deterministic = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, sinks)
    ctx.attributes = (causal, window, scale, softcap, deterministic)
    # A gradient that does not flow into lse arrives as None, not zeros.
    ctx.set_materialize_grads(False)


def _attention_backward(ctx, grad_o, grad_lse):
    op = "flashcore.attention backward"
    if grad_lse is not None:
        raise NotImplementedError(
            f"{op}: the loss depends on the returned lse, and FlashCore's "
            "backward takes the gradient of o only: detach lse "
            "(lse.detach()) where it enters the loss")
    q, k, v, o, lse, sinks = ctx.saved_tensors
    if lse.numel() == 0:
        _fail(f"{op}: the forward ran without its lse (return_lse=False on "
              "torch.ops.flashcore.attention), which the backward needs: "
              "call flashcore.attention, which keeps it when inputs require "
              "grad")
    if grad_o is None:
        return (None,) * 10
    causal, window, scale, softcap, deterministic = ctx.attributes
    # The lse holds the sinks: the backward of q, k and v is the one
    # without them. Where no graph is traced or recorded (eager, without
    # create_graph) the implementation runs without the dispatcher's cost;
    # elsewhere the op, whose autograd refuses a second derivative by name.
    backward = _attention_backward_impl if _direct(
        (grad_o, q, k, v, o, lse)) else \
        torch.ops.flashcore.attention_backward.default
    dq, dk, dv = backward(grad_o, q, k, v, o, lse, causal, window, scale,
                          softcap, deterministic)
    dsinks = None
    if sinks is not None and ctx.needs_input_grad[8]:
        # d loss / d sinks[h] = -sum over the head's rows of P(sink) * delta,
        # P(sink) = exp(sinks[h] - lse), delta = rowsum(dout * o).
        delta = (grad_o.float() * o.float()).sum(-1).transpose(1, 2)
        dsinks = -(torch.exp(sinks.view(1, -1, 1) - lse) * delta).sum((0, 2))
    return dq, dk, dv, None, None, None, None, None, dsinks, None


def _setup_nothing(ctx, inputs, output):
    pass


def _register(name, impl, fake, backward, setup_context=_setup_nothing):
    """Registers op flashcore::name: impl for CUDA and CPU tensors (on CPU
    tensors its checks say what is wrong), fake, and the autograd rule
    backward with setup_context."""
    for key in ("CUDA", "CPU"):
        _lib.impl(name, impl, key)
    torch.library.register_fake(f"flashcore::{name}", fake, lib=_lib)
    torch.library.register_autograd(f"flashcore::{name}", backward,
                                    setup_context=setup_context, lib=_lib)


_register("attention", _attention_impl, _attention_fake, _attention_backward,
          _setup_attention)


# flashcore::attention_with_kvcache: the attention's implementation and
# fake with the key counts and the page table (the op's argument order).
def _kvcache_impl(q, k_cache, v_cache, cache_seqlens=None, causal=False,
                  window=None, scale=None, return_lse=False, softcap=0.0,
                  sinks=None, page_table=None):
    return _attention_impl(q, k_cache, v_cache, causal, window, scale,
                           return_lse, softcap, sinks,
                           sequences=_Sequences(cache_seqlens, page_table),
                           op=_KVCACHE)


def _kvcache_fake(q, k_cache, v_cache, cache_seqlens=None, causal=False,
                  window=None, scale=None, return_lse=False, softcap=0.0,
                  sinks=None, page_table=None):
    return _attention_fake(q, k_cache, v_cache, causal, window, scale,
                           return_lse, softcap, sinks,
                           sequences=_Sequences(cache_seqlens, page_table),
                           op=_KVCACHE)


def _kvcache_backward(ctx, grad_o, grad_lse):
    raise NotImplementedError(
        "flashcore.attention_with_kvcache has no backward: it is for "
        "inference (call it on tensors that do not require grad, or under "
        "torch.no_grad())")


_register("attention_with_kvcache", _kvcache_impl, _kvcache_fake,
          _kvcache_backward)


# flashcore::attention_varlen: packed sequences ([total, H, D] each) run as
# one batch entry ([1, total, H, D] views) with their offsets.
def _check_packed(q, k, v, paged=False):
    """q (and k and v, unless paged: then pools of pages [num_pages,
    page_size, heads, head_dim]) are packed sequences: [total_tokens, heads,
    head_dim]."""
    for name, t in zip(("q", "k", "v"), (q, k, v)):
        _check_tensor(name, t, _VARLEN)
        pool = paged and name != "q"
        if t.dim() != (4 if pool else 3):
            _fail(f"{_VARLEN}: {name} has {t.dim()} dimensions "
                  f"{tuple(t.shape)}, expected " +
                  ("4: [num_pages, page_size, heads, head_dim] (a page_table "
                   "is given)" if pool else
                   "3: [total_tokens, heads, head_dim] (the sequences packed "
                   "one after the other)"))


def _varlen_outputs(q, v, return_lse):
    """o like q with v's head dim, and lse [heads_q, total_q] f32
    (FlashAttention's varlen layout; an empty placeholder without
    return_lse)."""
    total, hq, _ = q.shape
    o = _empty_output(q, v)
    lse = torch.empty((hq, total) if return_lse else (0,),
                      dtype=torch.float32, device=q.device)
    return o, lse


def _packed_views(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                  seqused_k=None, page_table=None, max_seqlen_k=None):
    """The views of packed q ([1, total, H, D]) and k and v (the same, or
    their page pools as they are), and their _Sequences; their ranks
    checked."""
    paged = page_table is not None
    _check_packed(q, k, v, paged)
    sequences = _Sequences(seqused_k, page_table, cu_seqlens_q, cu_seqlens_k,
                           max_seqlen_q,
                           0 if max_seqlen_k is None else max_seqlen_k)
    views = (q.unsqueeze(0),) + ((k, v) if paged else
                                 (k.unsqueeze(0), v.unsqueeze(0)))
    return views, sequences


def _packed_call(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, window,
                 sinks, seqused_k=None, page_table=None, max_seqlen_k=None):
    """_packed_views, every check made."""
    views, sequences = _packed_views(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                     max_seqlen_q, seqused_k, page_table,
                                     max_seqlen_k)
    _check_attention(*views, window, sinks, sequences, _VARLEN)
    return views, sequences


def _varlen_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                 causal=False, window=None, scale=None, return_lse=False,
                 softcap=0.0, sinks=None, seqused_k=None, page_table=None,
                 max_seqlen_k=None):
    views, sequences = _packed_call(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                    max_seqlen_q, window, sinks, seqused_k,
                                    page_table, max_seqlen_k)
    o, lse = _varlen_outputs(q, v, return_lse)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    _run_attention(*views, o.data_ptr(), lse.data_ptr() if return_lse else 0,
                   causal, window, scale, softcap, sinks, flags, sequences,
                   _VARLEN)
    return o, lse


def _varlen_direct(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, causal,
                   window, scale, return_lse, softcap, sinks, seqused_k,
                   page_table, max_seqlen_k):
    """_varlen_impl as _attention_direct is _attention_impl: no placeholder
    lse, and the checks once per signature (_fill_attention_desc's), which
    decode's host time needs (a call made them all: 90 us a call against
    the kernel's 95 at 8 x 8192). o, or (o, lse)."""
    views, sequences = _packed_views(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                     max_seqlen_q, seqused_k, page_table,
                                     max_seqlen_k)
    o = _empty_output(q, v)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    if not return_lse:
        _run_attention(*views, o.data_ptr(), 0, causal, window, scale,
                       softcap, sinks, flags, sequences, _VARLEN)
        return o
    lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32,
                      device=q.device)
    _run_attention(*views, o.data_ptr(), lse.data_ptr(), causal, window,
                   scale, softcap, sinks, flags, sequences, _VARLEN)
    return o, lse


def _varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                 causal=False, window=None, scale=None, return_lse=False,
                 softcap=0.0, sinks=None, seqused_k=None, page_table=None,
                 max_seqlen_k=None):
    views, sequences = _packed_call(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                    max_seqlen_q, window, sinks, seqused_k,
                                    page_table, max_seqlen_k)
    _check_with_capi(*views, causal, window, scale, return_lse, softcap,
                     sinks, sequences)
    return _varlen_outputs(q, v, return_lse)


def _varlen_backward(ctx, grad_o, grad_lse):
    raise NotImplementedError(
        "flashcore.attention_varlen has no backward yet (packed sequences "
        "are forward only): call it on tensors that do not require grad, "
        "or under torch.no_grad(); flashcore.attention is differentiable")


_register("attention_varlen", _varlen_impl, _varlen_fake, _varlen_backward)


def _dense_gradient(dout, op):
    """dout as the C API takes it: a dense head dim, 16-byte strides and
    address (the gradient autograd hands over may be an expanded or sliced
    view); copied only where it is not."""
    _check_tensor("dout", dout, op)
    if dout.stride(3) != 1 or any(s % 8 for s in dout.stride()[:3]) or \
            dout.data_ptr() % 16:
        dout = dout.contiguous()
    return dout


def _attention_backward_outputs(q, k, v):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _deterministic(asked):
    """Whether a backward gives the same bits every run: asked for by the
    call (FlashAttention's deterministic=True) or by
    torch.use_deterministic_algorithms(True)."""
    return bool(asked) or torch.are_deterministic_algorithms_enabled()


# (CUDA device index, head dim, v's head dim, deterministic) -> whether
# the backward takes a dq workspace there.
_USES_WORKSPACE = {}


def _backward_uses_workspace(device, desc):
    """Whether the backward of `desc` (an AttentionBackwardDesc with its
    deterministic set) on CUDA device `device` (an index) adds dq into an
    f32 workspace, the one-pass kernel: the C API's rule
    (fmhaAttentionBackwardUsesWorkspace), asked once per head dims."""
    f = desc.forward
    key = (device, f.headDim, f.valueHeadDim, desc.deterministic)
    uses = _USES_WORKSPACE.get(key)
    if uses is None:
        answer = ctypes.c_int()
        _capi.call(_capi.lib().fmhaAttentionBackwardUsesWorkspace,
                   _capi.jit(device), ctypes.addressof(desc),
                   ctypes.byref(answer))
        uses = _USES_WORKSPACE[key] = bool(answer.value)
    return uses


def _attention_backward_impl(dout, q, k, v, o, lse, causal=False, window=None,
                             scale=None, softcap=0.0, deterministic=False):
    """fmhaAttentionBackward on the current stream: dq, dk, dv like q, k and
    v, delta (rowsum(dout * o), f32) and, where _backward_uses_workspace,
    the workspace from torch's allocator (the size with which the C API
    runs fastest: the dq accumulator, and where it slices a GQA group's
    query heads their dk and dv); the same bits every run where
    deterministic or torch.use_deterministic_algorithms(True)."""
    op = "flashcore.attention backward"
    _check_attention(q, k, v, window)
    # o's shape: q's with v's head dim (which the C API refuses where it
    # differs from q's, by name).
    shape = (*q.shape[:-1], v.shape[-1])
    if dout.shape != shape or o.shape != shape:
        _fail(f"{op}: dout is {tuple(dout.shape)} and o {tuple(o.shape)}, "
              f"expected the forward's o shape {shape}")
    dout = _dense_gradient(dout, op)
    b, sq, hq, _ = q.shape
    if lse.shape != (b, hq, sq) or lse.dtype != torch.float32 or \
            not lse.is_contiguous():
        _fail(f"{op}: lse is {lse.dtype} {tuple(lse.shape)}, expected the "
              f"forward's contiguous torch.float32 {(b, hq, sq)}")
    dq, dk, dv = _attention_backward_outputs(q, k, v)
    delta = torch.empty((b, hq, sq), dtype=torch.float32, device=q.device)
    if window is not None:
        window = tuple(window)
    _pack_attention(q, k, v, (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                              o.data_ptr(), lse.data_ptr()), o.stride(),
                    causal, window, scale, softcap)
    desc = _capi.AttentionBackwardDesc()
    ctypes.memmove(ctypes.addressof(desc.forward), _state.desc_address,
                   ctypes.sizeof(desc.forward))
    desc.dout, desc.dq, desc.dk, desc.dv, desc.delta = (
        dout.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
        delta.data_ptr())
    # Strides of the batch, head and row dimensions ([B, S, H, D] tensors).
    for name, t in (("doutStride", dout), ("dqStride", dq), ("dkStride", dk),
                    ("dvStride", dv)):
        s = t.stride()
        getattr(desc, name)[:] = (s[0], s[2], s[1])
    desc.deltaStride[:] = (hq * sq, sq, 1)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    device = q.device.index
    desc.deterministic = _deterministic(deterministic)
    if _backward_uses_workspace(device, desc):
        size = ctypes.c_size_t()
        _capi.call(_capi.lib().fmhaAttentionBackwardFastestWorkspaceSize,
                   _capi.jit(device), ctypes.addressof(desc),
                   ctypes.byref(size))
        workspace = torch.empty(size.value, dtype=torch.uint8,
                                device=q.device)
        desc.workspace, desc.workspaceBytes = workspace.data_ptr(), size.value
    _capi.call(_capi.lib().fmhaAttentionBackward, _capi.jit(device),
               ctypes.addressof(desc), _raw_stream(device), flags)
    return dq, dk, dv


def _attention_backward_fake(dout, q, k, v, o, lse, causal=False, window=None,
                             scale=None, softcap=0.0, deterministic=False):
    _check_attention(q, k, v, window)
    return _attention_backward_outputs(q, k, v)


def _attention_double_backward(ctx, grad_dq, grad_dk, grad_dv):
    raise NotImplementedError(
        "flashcore.attention has no second derivative: its backward is not "
        "differentiable")


_register("attention_backward", _attention_backward_impl,
          _attention_backward_fake, _attention_double_backward)


_is_compiling = torch.compiler.is_compiling
_Tensor = torch.Tensor


def _direct(tensors):
    """Whether an eager call may skip the dispatcher: plain CUDA tensors, no
    graph being traced, no gradient to record."""
    if _is_compiling():
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not _Tensor or not t.is_cuda or (
                grad and t.requires_grad):
            return False
    return True


def _eager(tensors):
    """Whether a call that autograd records may record _AttentionFunction
    rather than the op: plain CUDA tensors, no graph being traced."""
    return not _is_compiling() and all(
        type(t) is _Tensor and t.is_cuda for t in tensors)


def _attention_direct(q, k, v, causal, window, scale, return_lse, softcap,
                      sinks, sequences=None, op=_ATTENTION):
    """_attention_impl without the op's placeholder lse: o, or (o, lse)."""
    o = _empty_output(q, v)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    if not return_lse:
        _run_attention(q, k, v, o.data_ptr(), 0, causal, window, scale,
                       softcap, sinks, flags, sequences, op)
        return o
    b, sq, hq, _ = q.shape
    lse = torch.empty((b, hq, sq), dtype=torch.float32, device=q.device)
    _run_attention(q, k, v, o.data_ptr(), lse.data_ptr(), causal, window,
                   scale, softcap, sinks, flags, sequences, op)
    return o, lse


def attention(q, k, v, *, causal=False, window=None, scale=None,
              return_lse=False, softcap=0.0, sinks=None, deterministic=False):
    """Softmax attention, FlashAttention's layout and masks.

    q is [batch, seqlen_q, heads_q, head_dim], k and v [batch, seqlen_k,
    heads_kv, head_dim] (heads_q a multiple of heads_kv: GQA and MQA), f16
    or bf16 on one CUDA device. Any strides with a dense head_dim, so a
    [B, H, S, D] tensor passes as its .transpose(1, 2). head_dim a multiple
    of 16 from 32 to 256 (differentiable at 64, 128 and 256). v's head_dim
    may differ from q's and k's (DeepSeek's 192 and 128; not
    differentiable yet): o then has v's.

    causal: query i sees key j only if j <= i + seqlen_k - seqlen_q
    (bottom-right aligned). window=(left, right): query i sees key j only if
    i + seqlen_k - seqlen_q - left <= j <= ... + right. scale: the softmax
    scale (default 1/sqrt(head_dim)). softcap (FlashAttention's; 0: none):
    logit softcapping, each logit x = scale * q . k becoming
    softcap * tanh(x / softcap) (Gemma 2; differentiable).
    sinks (gpt-oss's attention sinks; None: none): a [heads_q] float32
    tensor, one logit per query head that joins each row's softmax
    denominator (exp(sinks[h]) added, with no value) and its lse;
    differentiable. return_lse: also return the log-sum-exp of each row's
    logits, [batch, heads_q, seqlen_q] f32.

    Differentiable in q, k and v: the backward runs FlashCore's kernels too
    (flashcore::attention_backward). On sm_90 they add dq's parts in any
    order, so its last bits may vary from run to run; deterministic=True
    (FlashAttention's name) or torch.use_deterministic_algorithms(True)
    makes them add in a fixed order: the same bits every run (other GPUs'
    backward always is). The loss may not depend on the returned lse.

    Returns o like q (and lse). The kernel runs on torch's current stream;
    it is compiled on first use for its dtype, head dim, masks and scale
    and cached (flashcore.precompile does it ahead of time). Inside CUDA
    graph capture a call never compiles: an uncompiled kernel is a
    NotLoadedError.
    """
    tensors = (q, k, v) if sinks is None else (q, k, v, sinks)
    if _direct(tensors):
        return _attention_direct(q, k, v, causal, window, scale, return_lse,
                                 softcap, sinks)
    _check_window(window, "flashcore.attention")
    if _eager(tensors):
        o, lse = _AttentionFunction.apply(q, k, v, causal, window, scale,
                                          True, softcap, sinks,
                                          bool(deterministic))
        return (o, lse) if return_lse else o
    # The backward needs the LSE: computed whenever autograd may ask.
    keep_lse = return_lse or (torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad
        for t in (q, k, v, sinks)))
    o, lse = torch.ops.flashcore.attention.default(
        q, k, v, causal, None if window is None else list(window), scale,
        keep_lse, softcap, sinks, bool(deterministic))
    return (o, lse) if return_lse else o


class _AttentionFunction(torch.autograd.Function):
    """The autograd node that an eager differentiable flashcore.attention
    records: the op's forward (always with its lse) and autograd rule,
    without torch.library's dispatch and autograd wrapper around them,
    which cost a quarter of a backward's host time (docs/BENCHMARKS.md).
    Its inputs are the op's, so that the rule's gradients line up; the op
    keeps serving torch.compile, tensor subclasses and the dispatcher."""

    @staticmethod
    def forward(q, k, v, causal, window, scale, return_lse, softcap, sinks,
                deterministic):
        return _attention_direct(q, k, v, causal, window, scale, True,
                                 softcap, sinks)

    setup_context = staticmethod(_setup_attention)
    backward = staticmethod(_attention_backward)


def _key_counts(q, cache_seqlens):
    """cache_seqlens as the op takes it: an int becomes a [batch] int32
    tensor of it on q's device; a tensor or None stays as it is."""
    if cache_seqlens is None or isinstance(cache_seqlens, torch.Tensor):
        return cache_seqlens
    if not isinstance(cache_seqlens, (int, torch.SymInt)) or \
            isinstance(cache_seqlens, bool):
        _fail(f"{_KVCACHE}: cache_seqlens is a "
              f"{type(cache_seqlens).__name__}, expected a torch.int32 "
              "tensor [batch], an int or None")
    _check_tensor("q", q, _KVCACHE)
    return torch.full((q.shape[0],), cache_seqlens, dtype=torch.int32,
                      device=q.device)


def attention_with_kvcache(q, k_cache, v_cache, cache_seqlens=None, *,
                           page_table=None, causal=False, window=None,
                           scale=None, softcap=0.0, sinks=None,
                           return_lse=False):
    """Attention of new queries over KV caches filled to different lengths,
    FlashAttention's flash_attn_with_kvcache (without appending to the
    cache): decode, speculative decoding, chunked prefill. For inference:
    it has no backward.

    q is [batch, seqlen_q, heads_q, head_dim], k_cache and v_cache [batch,
    seqlen_cache, heads_kv, head_dim], with flashcore.attention's dtypes,
    layouts and strides. cache_seqlens (FlashAttention's): a [batch] int32
    tensor on q's device, or an int for every batch entry; entry b attends
    to the first cache_seqlens[b] keys of its cache (below 0 counts as 0,
    above seqlen_cache as seqlen_cache), and whatever the positions past
    them hold (NaN included) never reaches the result. None: every cache
    is full (flashcore.attention). An entry with no keys gets zeros (and
    lse +inf).

    page_table (FlashAttention's; None: none) makes the caches paged:
    k_cache and v_cache are then pools of pages [num_pages, page_size,
    heads_kv, head_dim] (page_size a multiple of 8), and page_table a
    contiguous [batch, pages_per_sequence] int32 tensor on q's device: key
    j of entry b is row j % page_size of page page_table[b, j // page_size],
    seqlen_cache being pages_per_sequence * page_size. Only the entries of
    pages that hold an entry's keys are read (an entry outside [0,
    num_pages) reads another page, never memory outside the pool).

    causal and window are flashcore.attention's, aligned to each entry's
    own length: query i sees key j only if j <= i + cache_seqlens[b] -
    seqlen_q. scale, softcap, sinks and return_lse are
    flashcore.attention's. Returns o like q (and lse [batch, heads_q,
    seqlen_q] f32). Decode folds GQA groups and splits long caches over
    the GPU as flashcore.attention does.
    """
    cache_seqlens = _key_counts(q, cache_seqlens)
    tensors = (q, k_cache, v_cache) + tuple(
        t for t in (cache_seqlens, sinks, page_table) if t is not None)
    if _direct(tensors):
        return _attention_direct(q, k_cache, v_cache, causal, window, scale,
                                 return_lse, softcap, sinks,
                                 _Sequences(cache_seqlens, page_table),
                                 _KVCACHE)
    _check_window(window, _KVCACHE)
    o, lse = torch.ops.flashcore.attention_with_kvcache.default(
        q, k_cache, v_cache, cache_seqlens, causal,
        None if window is None else list(window), scale, return_lse, softcap,
        sinks, page_table)
    return (o, lse) if return_lse else o


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                     max_seqlen_k=None, *, causal=False, window=None,
                     scale=None, softcap=0.0, sinks=None, seqused_k=None,
                     page_table=None, return_lse=False):
    """Attention over a batch of sequences of different lengths, packed
    without padding: FlashAttention's flash_attn_varlen_func. Forward only
    (no backward yet).

    q is [total_q, heads_q, head_dim], k and v [total_k, heads_kv,
    head_dim]: the sequences one after the other, with flashcore.attention's
    dtypes, head dims and strides (a dense head_dim). cu_seqlens_q and
    cu_seqlens_k are contiguous [batch + 1] int32 tensors on q's device:
    sequence b is rows cu_seqlens_q[b] to cu_seqlens_q[b + 1] of q (and o)
    and rows cu_seqlens_k[b] to cu_seqlens_k[b + 1] of k and v. Lengths may
    be 0. max_seqlen_q (an int) is the most queries a sequence has: it sizes
    the grid (a row past it may be left uncomputed). max_seqlen_k (an int,
    or None: unknown) is the most keys a sequence has: decode (one query per
    sequence, or a few of grouped heads) on an H100 splits each sequence's
    keys over several CTAs by it where the sequences alone would leave SMs
    idle, as flashcore.attention's decode does (without it, a paged or
    per-sequence cache splits by its capacity, packed keys not at all).

    seqused_k (FlashAttention's; None: none): a contiguous [batch] int32
    tensor, sequence b attending to the first seqused_k[b] of its keys
    (clamped to [0, its key count]). page_table (FlashAttention's; vLLM's
    block table; None: none) puts the keys in pages, as
    flashcore.attention_with_kvcache's: k and v are then pools [num_pages,
    page_size, heads_kv, head_dim], page_table a contiguous [batch,
    pages_per_sequence] int32 tensor, cu_seqlens_k None, and seqused_k the
    sequences' key counts (chunked prefill over a paged cache).

    causal, window, scale, softcap and sinks are flashcore.attention's,
    per sequence (causal aligns each sequence's queries to the end of its
    keys). Offsets outside [0, total] are clamped into it: wrong offsets
    give wrong rows, never reads or writes outside q, k, v and o. Rows of o
    outside every sequence are not written.

    Returns o like q, and with return_lse also lse [heads_q, total_q] f32.
    """
    tensors = tuple(t for t in (q, k, v, cu_seqlens_q, cu_seqlens_k, sinks,
                                seqused_k, page_table) if t is not None)
    if _direct(tensors):
        return _varlen_direct(q, k, v, cu_seqlens_q, cu_seqlens_k,
                              max_seqlen_q, causal, window, scale,
                              return_lse, softcap, sinks, seqused_k,
                              page_table, max_seqlen_k)
    window = None if window is None else list(window)
    _check_window(window, _VARLEN)
    o, lse = torch.ops.flashcore.attention_varlen.default(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, causal, window,
        scale, return_lse, softcap, sinks, seqused_k, page_table,
        max_seqlen_k)
    return (o, lse) if return_lse else o


def _precompile_attention(q, k, v, *, causal=False, window=None, scale=None,
                          return_lse=False, softcap=0.0, sinks=None,
                          sequences=None, op=_ATTENTION):
    _check_attention(q, k, v, window, sinks, sequences, op)
    if q.device.type != "cuda":
        _fail(f"flashcore.precompile: q is on {q.device}, expected a CUDA "
              "device")
    # Nothing is written: q's address stands for o's, and for lse's where
    # one is asked for (its presence picks the kernel).
    _run_attention(q, k, v, q.data_ptr(), q.data_ptr() if return_lse else 0,
                   causal, window, scale, softcap, sinks,
                   _capi.CALL_PREPARE_ONLY, sequences, op)


def _precompile_attention_with_kvcache(q, k_cache, v_cache,
                                       cache_seqlens=None, page_table=None,
                                       **kwargs):
    _precompile_attention(q, k_cache, v_cache,
                          sequences=_Sequences(_key_counts(q, cache_seqlens),
                                               page_table),
                          op=_KVCACHE, **kwargs)


def _precompile_attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                 max_seqlen_q, max_seqlen_k=None,
                                 seqused_k=None, page_table=None, **kwargs):
    views, sequences = _packed_call(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                    max_seqlen_q, kwargs.get("window"),
                                    kwargs.get("sinks"), seqused_k,
                                    page_table, max_seqlen_k)
    _precompile_attention(*views, sequences=sequences, op=_VARLEN, **kwargs)


_MERGE_DTYPES = _RESAMPLE_DTYPES


def _check_merge(outs, lses):
    """What the C API's descriptor cannot say: the tensors, their devices,
    ranks and dtypes, and lses' shape against outs'."""
    op = "flashcore.merge_attention"
    _check_tensor("outs", outs, op)
    _check_tensor("lses", lses, op)
    if outs.dim() != 5:
        _fail(f"{op}: outs has {outs.dim()} dimensions {tuple(outs.shape)}, "
              "expected 5: [states, batch, seq, heads, head_dim]")
    _check_device(("outs", "lses"), (outs, lses), op)
    if outs.dtype not in _MERGE_DTYPES:
        _fail(f"{op}: outs is {outs.dtype}, expected torch.float32, "
              "torch.float16 or torch.bfloat16")
    s, b, sq, h, _ = outs.shape
    if lses.dtype != torch.float32 or tuple(lses.shape) != (s, b, h, sq):
        _fail(f"{op}: lses is {lses.dtype} {tuple(lses.shape)}, expected "
              f"float32 {(s, b, h, sq)} ([states, batch, heads, seq], as "
              "flashcore.attention's lse per state)")
    if s < 1:
        _fail(f"{op}: outs has {s} states, expected at least 1")
    if outs.stride(4) != 1 and outs.shape[4] > 1:
        _fail(f"{op}: outs' head_dim has stride {outs.stride(4)}, expected 1 "
              "(a dense last dimension; FlashCore does not copy: pass "
              ".contiguous())")


def _merge_outputs(outs):
    _, b, sq, h, d = outs.shape
    return (torch.empty((b, sq, h, d), dtype=outs.dtype, device=outs.device),
            torch.empty((b, h, sq), dtype=torch.float32, device=outs.device))


def _run_merge(outs, lses, o, lse, flags):
    s, b, sq, h, d = outs.shape
    os_, ls, oo, lo = outs.stride(), lses.stride(), o.stride(), lse.stride()
    desc = _capi.MergeDesc(
        elementType=_MERGE_DTYPES[outs.dtype], headDim=d, states=s, batch=b,
        heads=h, querySeq=sq, outs=outs.data_ptr(), lses=lses.data_ptr(),
        o=o.data_ptr(), lse=lse.data_ptr())
    # The C API's order is [.., heads, seq]: FlashAttention's is [.., seq,
    # heads] for outs and o.
    desc.outsStride[:] = (os_[0], os_[1], os_[3], os_[2])
    desc.lsesStride[:] = ls
    desc.oStride[:] = (oo[0], oo[2], oo[1])
    desc.lseStride[:] = lo
    device = outs.device.index
    _capi.call(_capi.lib().fmhaMergeAttention, _capi.jit(device),
               ctypes.addressof(desc), _raw_stream(device), flags)


def _merge_impl(outs, lses):
    _check_merge(outs, lses)
    o, lse = _merge_outputs(outs)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    _run_merge(outs, lses, o, lse, flags)
    return o, lse


def _merge_fake(outs, lses):
    _check_merge(outs, lses)
    return _merge_outputs(outs)


def _merge_backward(ctx, grad_o, grad_lse):
    raise NotImplementedError(
        "flashcore.merge_attention has no backward yet (FlashCore issue "
        "#23): merge states that do not require grad (or under "
        "torch.no_grad())")


_register("merge_attention", _merge_impl, _merge_fake, _merge_backward)


def merge_attention(outs, lses):
    """Merges partial attention states of the same queries by their
    log-sum-exps: each state the attention over a part of the keys (key
    splits, or the keys another device holds in ring/context-parallel
    attention), with the lse flashcore.attention(..., return_lse=True)
    returns.

    outs is [states, batch, seqlen_q, heads, head_dim] (f32, f16 or bf16;
    torch.stack of flashcore.attention outputs), lses [states, batch,
    heads, seqlen_q] f32; any strides with a dense head_dim. A state whose
    lse is +inf or -inf saw no key and has no weight. Returns (o, lse): o
    [batch, seqlen_q, heads, head_dim] of outs' dtype, lse [batch, heads,
    seqlen_q], what attention over all the keys returns (f32 arithmetic;
    a row no state saw a key for gets zeros and +inf).
    """
    if _direct((outs, lses)):
        return _merge_impl(outs, lses)
    return tuple(torch.ops.flashcore.merge_attention.default(outs, lses))


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _check_resample(targets, times, values, lengths, mode):
    op = "flashcore.resample"
    _check_tensor("targets", targets, op)
    if mode not in _capi.RESAMPLE_MODES:
        _fail(f"{op}: mode is {mode!r}, expected one of "
              f"{', '.join(map(repr, _capi.RESAMPLE_MODES))}")
    if len(times) != len(values) or not times:
        _fail(f"{op}: {len(times)} times and {len(values)} values tensors, "
              "expected one of each per stream (at least one stream)")
    if lengths is not None and len(lengths) != len(times):
        _fail(f"{op}: {len(lengths)} lengths tensors for {len(times)} "
              "streams, expected one per stream (or lengths=None)")
    names, tensors = ["targets"], [targets]
    for i in range(len(times)):
        names += [f"times[{i}]", f"values[{i}]"]
        tensors += [times[i], values[i]]
        if lengths is not None:
            names.append(f"lengths[{i}]")
            tensors.append(lengths[i])
    for name, t in zip(names, tensors):
        _check_tensor(name, t, op)
    _check_device(names, tensors, op)
    if targets.dim() != 2 or targets.dtype != torch.float32:
        _fail(f"{op}: targets is {targets.dtype} {tuple(targets.shape)}, "
              "expected float32 [batch, targets]")
    batch = targets.shape[0]
    dtype = values[0].dtype
    if dtype not in _RESAMPLE_DTYPES:
        _fail(f"{op}: values[0] is {dtype}, expected torch.float32, "
              "torch.float16 or torch.bfloat16")
    for i in range(len(times)):
        t, x = times[i], values[i]
        if t.dim() != 2 or t.dtype != torch.float32 or t.shape[0] != batch:
            _fail(f"{op}: times[{i}] is {t.dtype} {tuple(t.shape)}, expected "
                  f"float32 [{batch}, samples]")
        if x.dim() != 3 or tuple(x.shape[:2]) != tuple(t.shape):
            _fail(f"{op}: values[{i}] is {tuple(x.shape)}, expected "
                  f"[{t.shape[0]}, {t.shape[1]}, features] like times[{i}]")
        if x.dtype != dtype:
            _fail(f"{op}: values[{i}] is {x.dtype} and values[0] {dtype}, "
                  "expected one dtype")
        if lengths is not None:
            n = lengths[i]
            if n.dtype != torch.int32 or tuple(n.shape) != (batch,):
                _fail(f"{op}: lengths[{i}] is {n.dtype} {tuple(n.shape)}, "
                      f"expected int32 [{batch}]")
    for name, t in zip(names, tensors):
        if not t.is_contiguous():
            _fail(f"{op}: {name} is not contiguous (strides {t.stride()}), "
                  "expected a dense tensor (FlashCore does not copy: pass "
                  ".contiguous())")


def _resample_output(targets, values):
    features = sum(x.shape[2] for x in values)
    return torch.empty((targets.shape[0], targets.shape[1], features),
                       dtype=values[0].dtype, device=targets.device)


def _run_resample(targets, times, values, lengths, mode, out, flags):
    n = len(times)
    streams = (_capi.ResampleStream * n)()
    for i in range(n):
        s = streams[i]
        s.times = times[i].data_ptr()
        s.values = values[i].data_ptr()
        s.lengths = lengths[i].data_ptr() if lengths is not None else None
        s.samples = times[i].shape[1]
        s.features = values[i].shape[2]
    desc = _capi.ResampleDesc(
        elementType=_RESAMPLE_DTYPES[values[0].dtype],
        mode=_capi.RESAMPLE_MODES[mode], batch=targets.shape[0],
        targetCount=targets.shape[1], targets=targets.data_ptr(),
        out=out.data_ptr(), numStreams=n, streams=streams)
    device = targets.device.index
    _capi.call(_capi.lib().fmhaResampleEx, _capi.jit(device),
               ctypes.addressof(desc), _raw_stream(device), flags)


def _resample_impl(targets, times, values, lengths=None, mode="linear"):
    _check_resample(targets, times, values, lengths, mode)
    out = _resample_output(targets, values)
    flags = _capi.CALL_LOADED_ONLY if _capturing() else _capi.CALL_DEFAULT
    _run_resample(targets, times, values, lengths, mode, out, flags)
    return out


def _resample_fake(targets, times, values, lengths=None, mode="linear"):
    _check_resample(targets, times, values, lengths, mode)
    return _resample_output(targets, values)


def _resample_backward(ctx, grad_out):
    raise NotImplementedError(
        "flashcore.resample has no backward: resample tensors that do not "
        "require grad (or under torch.no_grad())")


_register("resample", _resample_impl, _resample_fake, _resample_backward)


def resample(targets, times, values, lengths=None, *, mode="linear"):
    """Resamples streams of timestamped samples onto common target times.

    targets is [batch, targets] f32. Each stream has times [batch, samples]
    f32, non-decreasing in each row, and values [batch, samples, features]
    (f32, f16 or bf16, one dtype for all), and with lengths [batch] int32
    its rows' valid samples. Pass one stream's tensors, or lists of them.
    mode: "linear", "nearest" or "previous" (fmha.resample's modes).
    Returns out [batch, targets, sum of features], the streams side by side
    in their order, of the values' dtype. Dense tensors on one CUDA device.
    """
    times, values, lengths = _as_list(times), _as_list(values), _as_list(
        lengths)
    if _direct([targets] + list(times or ()) + list(values or ()) +
               list(lengths or ())):
        return _resample_impl(targets, times, values, lengths, mode)
    return torch.ops.flashcore.resample.default(targets, times, values,
                                                lengths, mode)


def _precompile_resample(targets, times, values, lengths=None, *,
                         mode="linear"):
    times, values, lengths = _as_list(times), _as_list(values), _as_list(
        lengths)
    _check_resample(targets, times, values, lengths, mode)
    if targets.device.type != "cuda":
        _fail(f"flashcore.precompile: targets is on {targets.device}, "
              "expected a CUDA device")
    _run_resample(targets, times, values, lengths, mode,
                  _resample_output(targets, values), _capi.CALL_PREPARE_ONLY)


_VARIANT_KEYS = {"dtype", "head_dim", "head_dim_v", "causal", "window",
                 "scale", "softcap", "sinks", "cache_seqlens", "page_size",
                 "varlen", "return_lse",
                 "seqlen_q", "num_heads", "num_heads_k", "backward",
                 "deterministic"}


def precompile_attention(variants, *, device=None, threads=0):
    """Gets ready the attention kernels of several variants at once, on
    `threads` threads (0: one per hardware thread): from FlashCore's disk
    cache, or compiled, then loaded on `device` (default: the current CUDA
    device). Each variant is a dict with dtype (torch.float16 or
    torch.bfloat16) and head_dim, and optionally head_dim_v (v's head dim
    where it differs), flashcore.attention's causal, window, scale, softcap, sinks (True: the kernel with sinks) and
    return_lse, cache_seqlens (True: flashcore.attention_with_kvcache's
    kernel with key counts), page_size (its kernel for a page_table over
    pages of that many rows), varlen (True: flashcore.attention_varlen's
    kernel), seqlen_q (default: every query length; a length: the kernel
    for that length only; with varlen, max_seqlen_q), num_heads and
    num_heads_k (q's and k's heads: grouped-query decode with a few
    queries may pack a group's heads into one tile, a kernel of its own),
    and backward (True: the backward's kernels too; with deterministic
    True, those of flashcore.attention(..., deterministic=True)). Launches
    nothing; afterwards those calls, CUDA graph capture included, only
    launch.

        flashcore.precompile_attention(
            [dict(dtype=torch.bfloat16, head_dim=d, causal=c)
             for d in (64, 128, 256) for c in (False, True)])
    """
    variants = list(variants)
    descs = (_capi.AttentionDesc * max(1, len(variants)))()
    for i, variant in enumerate(variants):
        op = f"flashcore.precompile_attention: variants[{i}]"
        unknown = set(variant) - _VARIANT_KEYS
        if unknown or "dtype" not in variant or "head_dim" not in variant:
            _fail(f"{op} is {variant}, expected dtype, head_dim and any of "
                  f"{sorted(_VARIANT_KEYS - {'dtype', 'head_dim'})}")
        if variant["dtype"] not in _ATTENTION_DTYPES:
            _fail(f"{op}: dtype is {variant['dtype']}, expected "
                  "torch.float16 or torch.bfloat16")
        window = variant.get("window")
        _check_window(window, op)
        if (variant.get("cache_seqlens") or variant.get("page_size") or
                variant.get("varlen")) and variant.get("backward"):
            _fail(f"{op} is {variant}, expected cache_seqlens, page_size and "
                  "varlen or backward, not both: "
                  "flashcore.attention_with_kvcache and "
                  "flashcore.attention_varlen have no backward")
        d = descs[i]
        d.elementType = _ATTENTION_DTYPES[variant["dtype"]]
        d.headDim = variant["head_dim"]
        d.valueHeadDim = variant.get("head_dim_v") or 0
        d.causal = bool(variant.get("causal", False))
        d.scale = variant.get("scale") or 0.0
        d.softcap = variant.get("softcap") or 0.0
        # Only whether sinks is NULL is read.
        d.sinks = _STAND_IN if variant.get("sinks") else None
        # Only whether keyLengths is NULL is read.
        d.keyLengths = _STAND_IN if variant.get("cache_seqlens") else None
        # Only whether pageTable is NULL is read, and pageSize with it.
        if variant.get("page_size"):
            d.pageTable, d.pageSize = _STAND_IN, variant["page_size"]
        if window is not None:
            d.hasWindow, d.windowLeft, d.windowRight = 1, window[0], window[1]
        # Only whether lse is NULL is read.
        d.lse = _STAND_IN if variant.get("return_lse") else None
        # Only whether the offsets are NULL is read, and maxQueryLength
        # with them.
        if variant.get("varlen"):
            # Keys packed as the queries are, or (page_size) in pages.
            d.queryOffsets = _STAND_IN
            d.keyOffsets = None if variant.get("page_size") else _STAND_IN
            d.maxQueryLength = variant.get("seqlen_q") or 0
        else:
            d.querySeq = variant.get("seqlen_q") or 0
        # Grouped-query heads: on an H100 a few queries of a group's heads
        # may run as one tile's rows, a kernel of its own.
        d.queryHeads = variant.get("num_heads") or 0
        d.kvHeads = variant.get("num_heads_k") or 0
    device = torch.device("cuda", device) if isinstance(device, int) else \
        torch.device(device or "cuda")
    if device.type != "cuda":
        _fail(f"flashcore.precompile_attention: device is {device}, "
              "expected a CUDA device")
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    backward = [(d, variant) for d, variant in zip(descs, variants)
                if variant.get("backward")]
    grads = (_capi.AttentionBackwardDesc * max(1, len(backward)))()
    for grad, (d, variant) in zip(grads, backward):
        grad.forward = d
        # Only whether the workspace is NULL and deterministic are read: the
        # backward's kernels as _attention_backward_impl will run them now.
        grad.deterministic = _deterministic(variant.get("deterministic"))
        if _backward_uses_workspace(index, grad):
            grad.workspace = _STAND_IN
    _capi.call(_capi.lib().fmhaAttentionPrecompile, _capi.jit(index),
               ctypes.addressof(descs), len(variants), threads)
    if backward:
        _capi.call(_capi.lib().fmhaAttentionBackwardPrecompile,
                   _capi.jit(index), ctypes.addressof(grads), len(backward),
                   threads)


def precompile(op, *args, **kwargs):
    """Compiles and loads the kernel that op(*args, **kwargs) would launch,
    and launches nothing: afterwards that call, inside CUDA graph capture
    too, only launches. op is flashcore.attention,
    flashcore.attention_with_kvcache, flashcore.attention_varlen or
    flashcore.resample; the tensors may
    be those of the later call or any CUDA tensors of their shapes, dtypes
    and strides (their contents are not read). Kernels also go to
    FlashCore's disk cache, so a later process loads them without a
    compile.

        flashcore.precompile(flashcore.attention, q, k, v, causal=True)

    flashcore.precompile_attention prepares many attention variants at
    once, on parallel threads.
    """
    if op is attention:
        # deterministic picks the backward's kernels, not the forward's.
        kwargs.pop("deterministic", None)
        return _precompile_attention(*args, **kwargs)
    if op is attention_with_kvcache:
        return _precompile_attention_with_kvcache(*args, **kwargs)
    if op is attention_varlen:
        return _precompile_attention_varlen(*args, **kwargs)
    if op is resample:
        return _precompile_resample(*args, **kwargs)
    raise TypeError(f"flashcore.precompile: op is {op!r}, expected "
                    "flashcore.attention, flashcore.attention_with_kvcache, "
                    "flashcore.attention_varlen or flashcore.resample")
