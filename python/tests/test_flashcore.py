"""flashcore on any machine, GPU or not: the package and its library, the
doctor, the torch ops' registration and shape inference (meta tensors,
torch.compile), and the errors bad input gets. scripts/gpu/python.sh checks
the kernels themselves on the GPU machine."""

import os
import subprocess
import sys

import pytest
import torch

import flashcore
from flashcore import _capi

HAS_GPU = torch.cuda.is_available()


def meta(*shape, dtype=torch.float16):
    return torch.empty(shape, dtype=dtype, device="meta")


# --- the package and its library ------------------------------------------

def test_library_is_the_packaged_one():
    if os.environ.get("FLASHCORE_LIBRARY"):
        pytest.skip("FLASHCORE_LIBRARY names another library")
    package = os.path.dirname(os.path.abspath(flashcore.__file__))
    assert _capi.library_path() == os.path.join(package, "libflashcore.so")
    assert os.path.exists(_capi.library_path())


def test_wheel_ships_kernels():
    # fmha-seed's entries, for compute capability 9.0 (sm_90a) and for
    # each of 8.0, 8.6 and 8.9 (sm_80): the attention kernels (56 and 24;
    # sm_90a's one query and few queries have tiles of their own, 12 each:
    # d x dtype x lse, the few causal; and d64's short queries, non-causal,
    # 4: dtype x lse), decode's split-KV kernels (6: d x
    # dtype) and merges (12: d x dtype x lse), the deterministic backward
    # (12: d x dtype x causal; for 8.6 and 8.9 at d256 the kernels that fit
    # their 99 KB) and, for sm_90a and for 8.0 (Python's default backward
    # on an A100), the one with a dq workspace (12: d x dtype x causal);
    # for sm_90a both of its backwards (ordered and not) again with the
    # GQA groups' query heads sliced (24).
    if os.environ.get("FLASHCORE_LIBRARY"):
        pytest.skip("FLASHCORE_LIBRARY names another library")
    kernels = os.path.join(os.path.dirname(_capi.library_path()), "kernels")
    entries = [f for f in os.listdir(kernels) if f.endswith(".fmhac")]
    assert len(entries) == (56 + 6 + 12 + 12 + 12 + 24) \
        + 3 * (24 + 6 + 12 + 12) + 12
    for name in entries:  # disk cache entries (DiskCache.cpp's header)
        with open(os.path.join(kernels, name), "rb") as entry:
            assert entry.read(8) == b"FMHAC\x01\r\n", name


def test_version_is_the_compilers():
    version = flashcore.version()
    # git describe, then the configuration's hash: see cmake/WriteVersion.cmake.
    assert version and version == _capi.lib().fmhaVersion().decode()


def test_library_exports_only_the_c_api():
    names = subprocess.run(["nm", "-D", "--defined-only", _capi.library_path()],
                           capture_output=True, text=True, check=True).stdout
    symbols = [line.split()[-1] for line in names.splitlines() if line.strip()]
    assert "fmhaAttentionEx" in symbols
    assert all(s.startswith("fmha") for s in symbols), symbols


def test_descriptor_layout_matches_ctypes():
    assert _capi.ATTENTION_DESC.size == _capi.ctypes.sizeof(_capi.AttentionDesc)
    # The workspace fields, then the key counts, the page table and the
    # packed sequences' offsets close the descriptor, as in FlashCore.h.
    fields = [name for name, _ in _capi.AttentionDesc._fields_]
    assert fields[-11:] == ["workspace", "workspaceBytes", "keyLengths",
                            "pageTable", "pages", "pageSize", "queryOffsets",
                            "keyOffsets", "maxQueryLength", "valueHeadDim",
                            "maxKeyLength"]


# --- the doctor ------------------------------------------------------------

def test_doctor_reports_the_machine():
    report = flashcore.doctor()
    for line in ("FlashCore ", "driver:", "compiler:", "cache:", "verdict:"):
        assert line in report
    if not HAS_GPU:
        assert "the JIT cannot run kernels here" in report
        assert "fix:" in report


def test_python_m_flashcore_prints_the_doctor():
    run = subprocess.run([sys.executable, "-m", "flashcore"],
                         capture_output=True, text=True)
    assert "verdict:" in run.stdout
    assert run.returncode == (0 if HAS_GPU else 1)


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without a GPU")
def test_first_gpu_call_says_what_is_missing():
    with pytest.raises(flashcore.FlashCoreError) as error:
        _capi.jit(0)
    message = str(error.value)
    assert "cannot run kernels on CUDA device 0" in message
    assert "no CUDA driver" in message  # the doctor's words
    assert "flashcore.doctor()" in message


# --- registration ----------------------------------------------------------

@pytest.mark.parametrize("name,keys", [
    ("flashcore::attention", ("CUDA", "Meta", "Autograd")),
    ("flashcore::attention_with_kvcache", ("CUDA", "CPU", "Meta", "Autograd")),
    ("flashcore::attention_varlen", ("CUDA", "CPU", "Meta", "Autograd")),
    ("flashcore::resample", ("CUDA", "Meta", "Autograd")),
    ("flashcore::merge_attention", ("CUDA", "Meta", "Autograd")),
    ("flashcore::attention_backward", ("CUDA", "Meta", "Autograd")),
])
def test_ops_are_registered(name, keys):
    for key in keys:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, key), key


def test_attention_schema():
    schema = str(torch.ops.flashcore.attention.default._schema)
    assert schema == (
        "flashcore::attention(Tensor q, Tensor k, Tensor v, bool causal=False,"
        " int[]? window=None, float? scale=None, bool return_lse=False, "
        "float softcap=0., Tensor? sinks=None, bool deterministic=False) "
        "-> (Tensor, Tensor)")


def test_attention_with_kvcache_schema():
    schema = str(torch.ops.flashcore.attention_with_kvcache.default._schema)
    assert schema == (
        "flashcore::attention_with_kvcache(Tensor q, Tensor k_cache, Tensor "
        "v_cache, Tensor? cache_seqlens=None, bool causal=False, int[]? "
        "window=None, float? scale=None, bool return_lse=False, float "
        "softcap=0., Tensor? sinks=None, Tensor? page_table=None) -> (Tensor, "
        "Tensor)")


def test_attention_varlen_schema():
    schema = str(torch.ops.flashcore.attention_varlen.default._schema)
    assert schema == (
        "flashcore::attention_varlen(Tensor q, Tensor k, Tensor v, Tensor "
        "cu_seqlens_q, Tensor? cu_seqlens_k, SymInt max_seqlen_q, bool "
        "causal=False, int[]? window=None, float? scale=None, bool "
        "return_lse=False, float softcap=0., Tensor? sinks=None, Tensor? "
        "seqused_k=None, Tensor? page_table=None, SymInt? max_seqlen_k=None)"
        " -> (Tensor, Tensor)")


# --- shape inference -------------------------------------------------------

def test_attention_shapes_bshd_gqa():
    q, k = meta(2, 100, 8, 128), meta(2, 300, 2, 128)
    o, lse = flashcore.attention(q, k, k, causal=True, return_lse=True)
    assert o.shape == q.shape and o.stride() == q.stride()
    assert o.dtype == torch.float16
    assert lse.shape == (2, 8, 100) and lse.dtype == torch.float32
    assert flashcore.attention(q, k, k).shape == q.shape


def test_attention_shapes_bhsd_through_strides():
    # A [B, H, S, D] tensor passes as its transpose; o keeps that layout.
    q = meta(2, 8, 100, 64, dtype=torch.bfloat16).transpose(1, 2)
    k = meta(2, 8, 300, 64, dtype=torch.bfloat16).transpose(1, 2)
    o = flashcore.attention(q, k, k, window=(16, 0), causal=True)
    assert o.shape == (2, 100, 8, 64) and o.stride() == q.stride()


def test_attention_shapes_value_head_dim():
    # DeepSeek's 192/128: o takes v's head dim, in q's layout (BSHD, or a
    # BHSD tensor's transpose).
    q, k, v = meta(2, 100, 8, 192), meta(2, 300, 2, 192), meta(2, 300, 2, 128)
    o, lse = flashcore.attention(q, k, v, causal=True, return_lse=True)
    assert o.shape == (2, 100, 8, 128) and o.is_contiguous()
    assert lse.shape == (2, 8, 100)
    q = meta(2, 8, 100, 64, dtype=torch.bfloat16).transpose(1, 2)
    k = meta(2, 8, 300, 64, dtype=torch.bfloat16).transpose(1, 2)
    v = meta(2, 8, 300, 256, dtype=torch.bfloat16).transpose(1, 2)
    o = flashcore.attention(q, k, v)
    assert o.shape == (2, 100, 8, 256) and o.transpose(1, 2).is_contiguous()
    o = flashcore.attention_with_kvcache(q, k, v, meta(2, dtype=torch.int32))
    assert o.shape == (2, 100, 8, 256)
    q, k, v = meta(700, 8, 192), meta(1500, 2, 192), meta(1500, 2, 128)
    cu = meta(6, dtype=torch.int32)
    o, lse = flashcore.attention_varlen(q, k, v, cu, cu, 300, causal=True,
                                        return_lse=True)
    assert o.shape == (700, 8, 128) and lse.shape == (8, 700)


def test_fake_tensor_mode_on_cuda_device():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=False):
        q = torch.empty(1, 64, 4, 64, dtype=torch.float16, device="cuda")
        o, lse = torch.ops.flashcore.attention(q, q, q, False, None, None,
                                               True)
    assert o.shape == q.shape and o.device.type == "cuda"
    assert lse.shape == (1, 4, 64)


def test_attention_with_kvcache_shapes_decode_gqa():
    q, k = meta(64, 1, 32, 128), meta(64, 8192, 8, 128)
    lengths = meta(64, dtype=torch.int32)
    o, lse = flashcore.attention_with_kvcache(q, k, k, lengths, causal=True,
                                              return_lse=True)
    assert o.shape == q.shape and o.stride() == q.stride()
    assert o.dtype == torch.float16
    assert lse.shape == (64, 32, 1) and lse.dtype == torch.float32
    # An int is every batch entry's length; None, full caches.
    assert flashcore.attention_with_kvcache(q, k, k, 100).shape == q.shape
    assert flashcore.attention_with_kvcache(q, k, k).shape == q.shape


def test_attention_with_kvcache_shapes_bhsd_through_strides():
    q = meta(2, 8, 4, 64, dtype=torch.bfloat16).transpose(1, 2)
    k = meta(2, 8, 300, 64, dtype=torch.bfloat16).transpose(1, 2)
    o = flashcore.attention_with_kvcache(q, k, k, meta(2, dtype=torch.int32),
                                         window=(16, 0), causal=True)
    assert o.shape == (2, 4, 8, 64) and o.stride() == q.stride()


def test_attention_with_kvcache_shapes_paged():
    # 64 pages of 16 rows; the table lists 20 per sequence (320 keys).
    q, pool = meta(3, 4, 8, 64), meta(64, 16, 2, 64)
    o, lse = flashcore.attention_with_kvcache(
        q, pool, pool, meta(3, dtype=torch.int32),
        page_table=meta(3, 20, dtype=torch.int32), causal=True,
        return_lse=True)
    assert o.shape == q.shape and lse.shape == (3, 8, 4)


def test_attention_varlen_shapes():
    # 5 sequences packed: 700 queries, 1500 keys, GQA 8:2.
    q, k = meta(700, 8, 128), meta(1500, 2, 128)
    cu = meta(6, dtype=torch.int32)
    o, lse = flashcore.attention_varlen(q, k, k, cu, cu, 300, 600,
                                        causal=True, return_lse=True)
    assert o.shape == q.shape and o.stride() == q.stride()
    assert lse.shape == (8, 700) and lse.dtype == torch.float32
    assert flashcore.attention_varlen(q, k, k, cu, cu, 300).shape == q.shape


def test_attention_varlen_shapes_over_pages_and_key_counts():
    # Chunked prefill: 3 sequences' new queries over a paged cache (40
    # pages of 16 rows; the table lists 8 per sequence) with key counts.
    q, pool = meta(300, 8, 64), meta(40, 16, 2, 64)
    n, table = meta(3, dtype=torch.int32), meta(3, 8, dtype=torch.int32)
    o, lse = flashcore.attention_varlen(
        q, pool, pool, meta(4, dtype=torch.int32), None, 128, causal=True,
        seqused_k=n, page_table=table, return_lse=True)
    assert o.shape == q.shape and lse.shape == (8, 300)
    cu = meta(4, dtype=torch.int32)
    assert flashcore.attention_varlen(q, meta(500, 2, 64), meta(500, 2, 64),
                                      cu, cu, 128,
                                      seqused_k=n).shape == q.shape


def test_attention_varlen_shapes_heads_first_storage():
    # [H, total, D] storage passed as its transpose; o keeps that layout.
    q = meta(8, 700, 64, dtype=torch.bfloat16).transpose(0, 1)
    k = meta(2, 900, 64, dtype=torch.bfloat16).transpose(0, 1)
    cu = meta(4, dtype=torch.int32)
    o = flashcore.attention_varlen(q, k, k, cu, cu, 512, window=(32, 0),
                                   causal=True)
    assert o.shape == (700, 8, 64) and o.stride() == q.stride()


def test_merge_attention_shapes():
    outs = meta(3, 2, 100, 8, 64, dtype=torch.bfloat16)
    lses = meta(3, 2, 8, 100, dtype=torch.float32)
    o, lse = flashcore.merge_attention(outs, lses)
    assert o.shape == (2, 100, 8, 64) and o.dtype == torch.bfloat16
    assert lse.shape == (2, 8, 100) and lse.dtype == torch.float32
    torch.library.opcheck(torch.ops.flashcore.merge_attention.default,
                          (outs, lses),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


@pytest.mark.parametrize("outs, lses, expected", [
    (meta(2, 1, 4, 8, 64), meta(2, 1, 8, 4, dtype=torch.float16),
     "lses is torch.float16 (2, 1, 8, 4), expected float32 (2, 1, 8, 4)"),
    (meta(2, 1, 4, 8, 64), meta(2, 1, 8, 5, dtype=torch.float32),
     "lses is torch.float32 (2, 1, 8, 5), expected float32 (2, 1, 8, 4)"),
    (meta(1, 4, 8, 64), meta(1, 8, 4, dtype=torch.float32),
     "outs has 4 dimensions (1, 4, 8, 64), expected 5"),
    (meta(2, 1, 4, 8, 64, dtype=torch.int8),
     meta(2, 1, 8, 4, dtype=torch.float32),
     "outs is torch.int8, expected torch.float32"),
    (meta(2, 1, 4, 8, 128)[..., ::2], meta(2, 1, 8, 4, dtype=torch.float32),
     "outs' head_dim has stride 2, expected 1"),
])
def test_merge_attention_errors(outs, lses, expected):
    assert expected in error_of(lambda: flashcore.merge_attention(outs, lses))


def test_merge_attention_on_cpu_is_refused():
    outs = torch.zeros(2, 1, 4, 8, 64)
    lses = torch.zeros(2, 1, 8, 4)
    assert "outs is on cpu, expected a CUDA device" in error_of(
        lambda: flashcore.merge_attention(outs, lses))


def test_resample_shapes():
    targets = meta(3, 50, dtype=torch.float32)
    times = [meta(3, 20, dtype=torch.float32), meta(3, 7, dtype=torch.float32)]
    values = [meta(3, 20, 8, dtype=torch.bfloat16),
              meta(3, 7, 4, dtype=torch.bfloat16)]
    lengths = [meta(3, dtype=torch.int32), meta(3, dtype=torch.int32)]
    out = flashcore.resample(targets, times, values, lengths, mode="nearest")
    assert out.shape == (3, 50, 12) and out.dtype == torch.bfloat16
    one = flashcore.resample(targets, times[0], values[0])
    assert one.shape == (3, 50, 8)


class GraphRecorder:
    """A torch.compile backend that keeps the FX graphs it is handed."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def targets(self):
        return [node.target for gm in self.graphs for node in gm.graph.nodes]


def test_torch_compile_traces_attention_without_graph_break():
    recorder = GraphRecorder()

    def block(q, k, v):
        o = flashcore.attention(q, k, v, causal=True)
        return (o * 2).sum(dim=-1)

    compiled = torch.compile(block, backend=recorder, fullgraph=True)
    q, k = meta(2, 64, 8, 64), meta(2, 64, 2, 64)
    assert compiled(q, k, k).shape == (2, 64, 8)
    assert len(recorder.graphs) == 1
    assert torch.ops.flashcore.attention.default in recorder.targets()


def test_torch_compile_traces_resample_without_graph_break():
    recorder = GraphRecorder()

    def features(targets, times, values):
        return flashcore.resample(targets, [times], [values], mode="linear")

    compiled = torch.compile(features, backend=recorder, fullgraph=True)
    out = compiled(meta(2, 10, dtype=torch.float32),
                   meta(2, 5, dtype=torch.float32),
                   meta(2, 5, 8, dtype=torch.float32))
    assert out.shape == (2, 10, 8)
    assert torch.ops.flashcore.resample.default in recorder.targets()


@pytest.mark.parametrize("lengths", ["tensor", "int"])
def test_torch_compile_traces_attention_with_kvcache_without_graph_break(
        lengths):
    recorder = GraphRecorder()

    def decode(q, k, v, cache_seqlens):
        n = cache_seqlens if lengths == "tensor" else 77
        o = flashcore.attention_with_kvcache(q, k, v, n, causal=True)
        return (o * 2).sum(dim=-1)

    compiled = torch.compile(decode, backend=recorder, fullgraph=True)
    q, k = meta(4, 1, 8, 64), meta(4, 1000, 2, 64)
    assert compiled(q, k, k, meta(4, dtype=torch.int32)).shape == (4, 1, 8)
    assert len(recorder.graphs) == 1
    assert torch.ops.flashcore.attention_with_kvcache.default in \
        recorder.targets()


def test_torch_compile_traces_attention_varlen_without_graph_break():
    recorder = GraphRecorder()

    def prefill(q, k, v, cu_q, cu_k):
        return flashcore.attention_varlen(q, k, v, cu_q, cu_k, 256, 256,
                                          causal=True).sum(dim=-1)

    compiled = torch.compile(prefill, backend=recorder, fullgraph=True)
    q, k = meta(600, 8, 64), meta(600, 2, 64)
    cu = meta(4, dtype=torch.int32)
    assert compiled(q, k, k, cu, cu).shape == (600, 8)
    assert len(recorder.graphs) == 1
    assert torch.ops.flashcore.attention_varlen.default in recorder.targets()


def test_torch_compile_aot_autograd_uses_the_fake():
    compiled = torch.compile(
        lambda q, k: flashcore.attention(q, k, k, return_lse=True)[1],
        backend="aot_eager", fullgraph=True)
    assert compiled(meta(1, 32, 4, 128), meta(1, 48, 4, 128)).shape == \
        (1, 4, 32)


def test_opcheck_on_meta_tensors():
    q, k = meta(2, 64, 4, 64), meta(2, 80, 2, 64)
    torch.library.opcheck(torch.ops.flashcore.attention.default,
                          (q, k, k, True, None, None, True),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


def test_opcheck_value_head_dim_on_meta_tensors():
    # DeepSeek's 192/128: o of v's head dim, in the fake implementation too.
    q, k, v = meta(2, 64, 4, 192), meta(2, 80, 2, 192), meta(2, 80, 2, 128)
    torch.library.opcheck(torch.ops.flashcore.attention.default,
                          (q, k, v, True, None, None, True),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


def test_opcheck_attention_with_kvcache_on_meta_tensors():
    q, k = meta(3, 4, 8, 64), meta(3, 500, 2, 64)
    torch.library.opcheck(torch.ops.flashcore.attention_with_kvcache.default,
                          (q, k, k, meta(3, dtype=torch.int32), True, None,
                           None, True),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))
    pool = meta(40, 64, 2, 64)
    torch.library.opcheck(torch.ops.flashcore.attention_with_kvcache.default,
                          (q, pool, pool, None, True, None, None, True, 0.0,
                           None, meta(3, 8, dtype=torch.int32)),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


def test_opcheck_attention_varlen_on_meta_tensors():
    q, k = meta(300, 8, 64), meta(500, 2, 64)
    torch.library.opcheck(torch.ops.flashcore.attention_varlen.default,
                          (q, k, k, meta(4, dtype=torch.int32),
                           meta(4, dtype=torch.int32), 128, True, None, None,
                           True),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_autograd_registration"))


# --- errors ----------------------------------------------------------------

def error_of(call):
    with pytest.raises(flashcore.InvalidArgumentError) as error:
        call()
    return str(error.value)


def test_cpu_tensors_are_refused():
    q = torch.zeros(1, 64, 4, 64, dtype=torch.float16)
    message = error_of(lambda: flashcore.attention(q, q, q))
    assert "q is on cpu, expected a CUDA device" in message


def test_mixed_devices_are_refused():
    q = meta(1, 64, 4, 64)
    k = torch.zeros(1, 64, 4, 64, dtype=torch.float16)
    assert "k is on cpu and q on meta" in error_of(
        lambda: flashcore.attention(q, k, k))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int8])
def test_dtypes_are_checked(dtype):
    q = meta(1, 64, 4, 64, dtype=dtype)
    assert f"q is {dtype}, expected torch.float16 or torch.bfloat16" in \
        error_of(lambda: flashcore.attention(q, q, q))


def test_value_head_dim_is_checked():
    q, v = meta(1, 64, 4, 192), meta(1, 64, 4, 76)
    assert "valueHeadDim is 76, expected 0 (headDim's) or a multiple of 8 " \
        "from 32 to 256" in error_of(lambda: flashcore.attention(q, q, v))
    assert "k is (1, 64, 4, 192) and v (1, 80, 4, 128), expected one shape " \
        "but for the head_dim" in error_of(
            lambda: flashcore.attention(q, q, meta(1, 80, 4, 128)))


def test_mixed_dtypes_are_refused():
    q, k = meta(1, 64, 4, 64), meta(1, 64, 4, 64, dtype=torch.bfloat16)
    assert "k is torch.bfloat16 and q torch.float16" in error_of(
        lambda: flashcore.attention(q, k, k))


def test_rank_is_checked():
    q = meta(64, 4, 64)
    assert "q has 3 dimensions (64, 4, 64), expected 4" in error_of(
        lambda: flashcore.attention(q, q, q))


def test_non_dense_head_dim_is_refused_not_copied():
    q = meta(1, 64, 4, 128)[..., ::2]
    assert "q's head_dim has stride 2, expected 1" in error_of(
        lambda: flashcore.attention(q, q, q))


def test_unsupported_head_dim_carries_the_c_api_message():
    q = meta(1, 64, 4, 76)
    assert "fmhaAttention: attention: headDim is 76, expected a multiple of " \
        "8 from 32 to 256" in error_of(lambda: flashcore.attention(q, q, q))


def test_softcap_keeps_the_shapes_and_a_bad_one_carries_the_c_api_message():
    q = meta(1, 64, 4, 96)
    assert flashcore.attention(q, q, q, softcap=30.0).shape == q.shape
    assert "softcap is -1.000000e+00, expected a positive finite value" in \
        error_of(lambda: flashcore.attention(q, q, q, softcap=-1.0))


def test_sinks_keep_the_shapes_and_flow_gradients():
    q = meta(1, 64, 4, 64).requires_grad_()
    sinks = torch.zeros(4, device="meta", requires_grad=True)
    o = flashcore.attention(q, q, q, sinks=sinks)
    assert o.shape == q.shape
    o.sum().backward()
    assert sinks.grad.shape == (4,) and q.grad.shape == q.shape


def test_sinks_of_the_wrong_shape_or_dtype_are_refused():
    q = meta(1, 64, 4, 64)
    for sinks in (torch.zeros(3, device="meta"),
                  torch.zeros(4, device="meta", dtype=torch.float16)):
        assert "expected a contiguous torch.float32 (4,): one logit per " \
            "query head" in error_of(
                lambda: flashcore.attention(q, q, q, sinks=sinks))


def test_head_ratio_carries_the_c_api_message():
    q, k = meta(1, 64, 8, 64), meta(1, 64, 3, 64)
    assert "queryHeads (Hq) 8 and kvHeads (Hkv) 3" in error_of(
        lambda: flashcore.attention(q, k, k))


def test_misaligned_stride_carries_the_c_api_message():
    # Heads 68 elements apart: not a multiple of 8 (16 bytes).
    q = meta(1, 64, 4, 68)[..., :64]
    message = error_of(lambda: flashcore.attention(q, q, q))
    assert "q's head stride is 68 elements, expected a non-negative " \
        "multiple of 8" in message


def test_mismatched_batch_is_refused():
    q, k = meta(2, 64, 4, 64), meta(3, 64, 4, 64)
    assert "expected the same batch and head_dim" in error_of(
        lambda: flashcore.attention(q, k, k))


@pytest.mark.parametrize("window", [(-1, 0), (4,), (1.5, 0), 5, "ab"])
def test_window_is_checked(window):
    q = meta(1, 64, 4, 64)
    assert "window is" in error_of(
        lambda: flashcore.attention(q, q, q, window=window))


@pytest.mark.parametrize("q, k, v, cache_seqlens, expected", [
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     meta(2, dtype=torch.int64),
     "cache_seqlens is torch.int64 (2,), expected torch.int32 (2,): one key "
     "count per batch entry"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     meta(3, dtype=torch.int32),
     "cache_seqlens is torch.int32 (3,), expected torch.int32 (2,)"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     meta(2, 1, dtype=torch.int32),
     "cache_seqlens is torch.int32 (2, 1), expected torch.int32 (2,)"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     meta(4, dtype=torch.int32)[::2],
     "cache_seqlens has stride 2, expected 1"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     torch.zeros(2, dtype=torch.int32),
     "cache_seqlens is on cpu and q on meta, expected one device"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 90, 2, 64), None,
     "k_cache is (2, 100, 2, 64) and v_cache (2, 90, 2, 64), expected one "
     "shape"),
    (meta(3, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64),
     meta(3, dtype=torch.int32),
     "q is (3, 1, 8, 64) and k_cache (2, 100, 2, 64), expected the same "
     "batch"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64, dtype=torch.bfloat16),
     meta(2, 100, 2, 64, dtype=torch.bfloat16), None,
     "k_cache is torch.bfloat16 and q torch.float16"),
    (meta(2, 1, 8, 64), meta(2, 100, 2, 64), meta(2, 100, 2, 64), 3.0,
     "cache_seqlens is a float, expected a torch.int32 tensor [batch], an "
     "int or None"),
])
def test_attention_with_kvcache_errors(q, k, v, cache_seqlens, expected):
    message = error_of(
        lambda: flashcore.attention_with_kvcache(q, k, v, cache_seqlens))
    assert message.startswith("flashcore.attention_with_kvcache: ")
    assert expected in message


@pytest.mark.parametrize("pool, table, expected", [
    (meta(40, 16, 2, 64), meta(2, 8, dtype=torch.int64),
     "page_table is torch.int64 (2, 8), expected torch.int32 (2, pages per "
     "sequence >= 1): one row of page numbers per batch entry"),
    (meta(40, 16, 2, 64), meta(3, 8, dtype=torch.int32),
     "page_table is torch.int32 (3, 8), expected torch.int32 (2,"),
    (meta(40, 16, 2, 64), meta(2, 0, dtype=torch.int32),
     "page_table is torch.int32 (2, 0), expected"),
    (meta(40, 16, 2, 64), meta(8, 2, dtype=torch.int32).t(),
     "page_table has strides (1, 2), expected a contiguous tensor"),
    (meta(40, 16, 2, 64), torch.zeros(2, 8, dtype=torch.int32),
     "page_table is on cpu and q on meta, expected one device"),
    # The C API's checks: a page size that is not a multiple of 8.
    (meta(40, 12, 2, 64), meta(2, 8, dtype=torch.int32),
     "pageSize is 12, expected 0 (no pages) or a positive multiple of 8"),
    (meta(40, 16, 2, 32), meta(2, 8, dtype=torch.int32),
     "q is (2, 1, 8, 64) and k_cache (40, 16, 2, 32), expected the same "
     "batch and head_dim"),
])
def test_attention_with_kvcache_page_table_errors(pool, table, expected):
    q = meta(2, 1, 8, 64)
    message = error_of(lambda: flashcore.attention_with_kvcache(
        q, pool, pool, meta(2, dtype=torch.int32), page_table=table))
    assert expected in message


def test_attention_with_kvcache_on_cpu_is_refused():
    q = torch.zeros(2, 1, 8, 64, dtype=torch.float16)
    k = torch.zeros(2, 100, 2, 64, dtype=torch.float16)
    assert "q is on cpu, expected a CUDA device" in error_of(
        lambda: flashcore.attention_with_kvcache(
            q, k, k, torch.full((2,), 50, dtype=torch.int32)))


def test_attention_with_kvcache_has_no_backward():
    q = meta(2, 1, 8, 64).requires_grad_()
    k = meta(2, 100, 2, 64)
    o = flashcore.attention_with_kvcache(q, k, k, meta(2, dtype=torch.int32))
    with pytest.raises(NotImplementedError,
                       match="attention_with_kvcache has no backward: it is "
                       "for inference"):
        o.sum().backward()


def _varlen(q=None, k=None, cu_q=None, cu_k=None, max_q=128, **kwargs):
    q = meta(300, 8, 64) if q is None else q
    k = meta(500, 2, 64) if k is None else k
    cu_q = meta(4, dtype=torch.int32) if cu_q is None else cu_q
    cu_k = meta(4, dtype=torch.int32) if cu_k is None else cu_k
    return lambda: flashcore.attention_varlen(q, k, k, cu_q, cu_k, max_q,
                                              **kwargs)


@pytest.mark.parametrize("call, expected", [
    (_varlen(q=meta(1, 300, 8, 64)),
     "q has 4 dimensions (1, 300, 8, 64), expected 3: [total_tokens, heads, "
     "head_dim]"),
    (_varlen(cu_q=meta(4, dtype=torch.int64)),
     "cu_seqlens_q is torch.int64 (4,), expected torch.int32 (batch + 1,)"),
    (_varlen(cu_k=meta(0, dtype=torch.int32)),
     "cu_seqlens_k is torch.int32 (0,), expected torch.int32 (batch + 1,)"),
    (_varlen(cu_k=meta(5, dtype=torch.int32)),
     "cu_seqlens_q is (4,) and cu_seqlens_k (5,), expected one shape"),
    (_varlen(cu_q=meta(8, dtype=torch.int32)[::2]),
     "cu_seqlens_q has stride 2, expected 1"),
    (_varlen(cu_q=torch.zeros(4, dtype=torch.int32)),
     "cu_seqlens_q is on cpu and q on meta, expected one device"),
    (_varlen(max_q=0), "max_seqlen_q is 0, expected an int >= 1"),
    (_varlen(max_seqlen_k=-1),
     "max_seqlen_k is -1, expected None or an int >= 0"),
    (_varlen(k=meta(500, 3, 64)),
     "queryHeads (Hq) 8 and kvHeads (Hkv) 3"),
    (_varlen(k=meta(500, 2, 32)),
     "q is (1, 300, 8, 64) and k (1, 500, 2, 32), expected the same batch "
     "and head_dim"),
    (_varlen(q=meta(300, 8, 76), k=meta(500, 2, 76)),
     "headDim is 76, expected a multiple of 8 from 32 to 256"),
    (lambda: flashcore.attention_varlen(
        meta(300, 8, 64), meta(500, 2, 64), meta(500, 2, 64),
        meta(4, dtype=torch.int32), None, 128),
     "cu_seqlens_k is None and page_table None, expected one of them"),
    (lambda: flashcore.attention_varlen(
        meta(300, 8, 64), meta(40, 16, 2, 64), meta(40, 16, 2, 64),
        meta(4, dtype=torch.int32), meta(4, dtype=torch.int32), 128,
        page_table=meta(3, 8, dtype=torch.int32)),
     "cu_seqlens_k is given and page_table given, expected one of them"),
    (lambda: flashcore.attention_varlen(
        meta(300, 8, 64), meta(500, 2, 64), meta(500, 2, 64),
        meta(4, dtype=torch.int32), None, 128,
        page_table=meta(3, 8, dtype=torch.int32)),
     "k has 3 dimensions (500, 2, 64), expected 4: [num_pages, page_size, "
     "heads, head_dim]"),
    (_varlen(seqused_k=meta(4, dtype=torch.int32)),
     "seqused_k is torch.int32 (4,), expected torch.int32 (3,): one key "
     "count per batch entry"),
    (lambda: flashcore.attention_varlen(
        meta(300, 8, 64), meta(40, 16, 2, 64), meta(40, 16, 2, 64),
        meta(4, dtype=torch.int32), None, 128,
        page_table=meta(2, 8, dtype=torch.int32)),
     "page_table is torch.int32 (2, 8), expected torch.int32 (3, pages per "
     "sequence >= 1)"),
])
def test_attention_varlen_errors(call, expected):
    # Python's own checks name the op; the C API's carry its message.
    message = error_of(call)
    assert message.startswith(("flashcore.attention_varlen: ",
                               "fmhaAttention: attention: "))
    assert expected in message


def test_attention_varlen_on_cpu_is_refused():
    q = torch.zeros(300, 8, 64, dtype=torch.float16)
    cu = torch.tensor([0, 100, 300], dtype=torch.int32)
    assert "q is on cpu, expected a CUDA device" in error_of(
        lambda: flashcore.attention_varlen(q, q, q, cu, cu, 200))


def test_attention_varlen_has_no_backward():
    q = meta(300, 8, 64).requires_grad_()
    o = flashcore.attention_varlen(q, q, q, meta(3, dtype=torch.int32),
                                   meta(3, dtype=torch.int32), 200)
    with pytest.raises(NotImplementedError,
                       match="attention_varlen has no backward yet"):
        o.sum().backward()


def test_resample_errors():
    targets = meta(2, 10, dtype=torch.float32)
    times, values = meta(2, 5, dtype=torch.float32), meta(2, 5, 8)
    assert "mode is 'cubic'" in error_of(
        lambda: flashcore.resample(targets, times, values, mode="cubic"))
    assert "lengths[0] is torch.int64" in error_of(
        lambda: flashcore.resample(targets, times, values,
                                   meta(2, dtype=torch.int64)))
    assert "times[0] is torch.float16" in error_of(
        lambda: flashcore.resample(targets, meta(2, 5), values))
    assert "values[0] is (2, 4, 8)" in error_of(
        lambda: flashcore.resample(targets, times, meta(2, 4, 8)))
    strided = meta(2, 5, 16)[..., ::2]
    assert "values[0] is not contiguous" in error_of(
        lambda: flashcore.resample(targets, times, strided))


def test_precompile_needs_a_cuda_device_and_a_known_op():
    q = meta(1, 64, 4, 64)
    assert "expected a CUDA device" in error_of(
        lambda: flashcore.precompile(flashcore.attention, q, q, q))
    # flashcore.attention's keywords, deterministic among them.
    assert "expected a CUDA device" in error_of(
        lambda: flashcore.precompile(flashcore.attention, q, q, q,
                                     causal=True, deterministic=True))
    assert "expected a CUDA device" in error_of(
        lambda: flashcore.precompile(flashcore.attention_with_kvcache, q, q,
                                     q, meta(1, dtype=torch.int32)))
    packed, cu = meta(64, 4, 64), meta(2, dtype=torch.int32)
    assert "expected a CUDA device" in error_of(
        lambda: flashcore.precompile(flashcore.attention_varlen, packed,
                                     packed, packed, cu, cu, 64))
    with pytest.raises(TypeError, match="expected flashcore.attention"):
        flashcore.precompile(torch.matmul, q, q)


@pytest.mark.parametrize("variant,expected", [
    (dict(dtype=torch.float32, head_dim=64), "dtype is torch.float32"),
    (dict(head_dim=64), "expected dtype, head_dim"),
    (dict(dtype=torch.float16, head_dim=64, seqlen=9), "expected dtype, "
     "head_dim"),
    (dict(dtype=torch.float16, head_dim=64, window=(-1, 0)), "window is"),
    (dict(dtype=torch.float16, head_dim=64, cache_seqlens=True,
          backward=True), "expected cache_seqlens, page_size and varlen or "
     "backward, not both"),
    (dict(dtype=torch.float16, head_dim=64, page_size=16, backward=True),
     "expected cache_seqlens, page_size and varlen or backward, not both"),
    (dict(dtype=torch.float16, head_dim=64, varlen=True, page_size=16,
          backward=True),
     "expected cache_seqlens, page_size and varlen or backward, not both"),
    (dict(dtype=torch.float16, head_dim=64, varlen=True, backward=True),
     "expected cache_seqlens, page_size and varlen or backward, not both"),
])
def test_precompile_attention_checks_each_variant(variant, expected):
    message = error_of(lambda: flashcore.precompile_attention(
        [dict(dtype=torch.float16, head_dim=128), variant]))
    assert "variants[1]" in message and expected in message


def test_precompile_attention_needs_a_cuda_device():
    assert "expected a CUDA device" in error_of(
        lambda: flashcore.precompile_attention(
            [dict(dtype=torch.float16, head_dim=128)], device="cpu"))


def test_attention_backward_schema():
    schema = str(torch.ops.flashcore.attention_backward.default._schema)
    assert schema == (
        "flashcore::attention_backward(Tensor dout, Tensor q, Tensor k, "
        "Tensor v, Tensor o, Tensor lse, bool causal=False, int[]? "
        "window=None, float? scale=None, float softcap=0., bool "
        "deterministic=False) -> (Tensor, Tensor, Tensor)")


def test_gradients_flow_through_the_backward_op():
    # On meta tensors the fakes run: the autograd wiring, not the kernels.
    q = meta(2, 64, 8, 128).requires_grad_()
    k = meta(2, 80, 2, 128).requires_grad_()
    v = meta(2, 80, 2, 128).requires_grad_()
    o = flashcore.attention(q, k, v, causal=True, window=(32, 0))
    assert o.grad_fn is not None
    o.sum().backward()
    for t in (q, k, v):
        assert t.grad.shape == t.shape and t.grad.dtype == t.dtype


def test_deterministic_reaches_the_backward(monkeypatch):
    # flashcore.attention(..., deterministic=True) carries the flag through
    # the forward op to the backward op; on meta tensors the fakes run.
    from flashcore import _ops
    seen = []
    fake = _ops._attention_backward_fake

    def spy(*args, **kwargs):
        seen.append(args[10] if len(args) > 10 else
                    kwargs.get("deterministic", False))
        return fake(*args, **kwargs)
    monkeypatch.setattr(_ops, "_attention_backward_fake", spy)
    torch.library.register_fake("flashcore::attention_backward", spy,
                                lib=_ops._lib, allow_override=True)
    try:
        for deterministic in (False, True):
            q = meta(1, 64, 4, 64).requires_grad_()
            o = flashcore.attention(q, q, q, deterministic=deterministic)
            o.sum().backward()
    finally:
        torch.library.register_fake("flashcore::attention_backward", fake,
                                    lib=_ops._lib, allow_override=True)
    assert seen == [False, True]
    assert _ops._deterministic(True) and not _ops._deterministic(False)


def test_bhsd_gradients_keep_the_layout():
    q = meta(1, 4, 64, 64, dtype=torch.bfloat16).transpose(1, 2)
    q.requires_grad_()
    dq, = torch.autograd.grad(flashcore.attention(q, q, q).sum(), q)
    assert dq.shape == q.shape


def test_opcheck_backward_on_meta_tensors():
    q, k = meta(2, 64, 4, 64), meta(2, 80, 2, 64)
    lse = torch.empty(2, 4, 64, dtype=torch.float32, device="meta")
    torch.library.opcheck(torch.ops.flashcore.attention_backward.default,
                          (q, q, k, k, q, lse, True, None, None),
                          test_utils=("test_schema", "test_faketensor"))


def test_backward_asks_the_c_api_whether_it_takes_a_workspace():
    # The rule is the C API's (fmhaAttentionBackwardUsesWorkspace, the one
    # fmha-seed ships kernels by; GTest KernelSpec.DefaultBackward...):
    # Python declares it and keeps no copy of it.
    fn = _capi.lib().fmhaAttentionBackwardUsesWorkspace
    assert fn.argtypes[2] is _capi.ctypes.POINTER(_capi.ctypes.c_int)
    # Refused by name without a JIT (no GPU is needed to ask this).
    uses = _capi.ctypes.c_int()
    desc = _capi.AttentionBackwardDesc()
    with pytest.raises(flashcore.FlashCoreError, match="must not be NULL"):
        _capi.call(fn, None, _capi.ctypes.addressof(desc),
                   _capi.ctypes.byref(uses))


def test_backward_asks_once_per_head_dims_and_determinism(monkeypatch):
    # _backward_uses_workspace passes the descriptor to the C API (faked
    # here: no GPU) and keeps each answer per device, head dims and
    # determinism.
    from flashcore import _ops
    asked = []

    def uses_workspace(jit, address, uses, message):
        desc = _capi.AttentionBackwardDesc.from_address(address)
        asked.append((desc.forward.headDim, desc.deterministic))
        uses._obj.value = int(not desc.deterministic)
        return _capi.SUCCESS

    class Library:
        fmhaAttentionBackwardUsesWorkspace = staticmethod(uses_workspace)
    monkeypatch.setattr(_capi, "lib", lambda: Library)
    monkeypatch.setattr(_capi, "jit", lambda device: None)
    monkeypatch.setattr(_ops, "_USES_WORKSPACE", {})
    desc = _capi.AttentionBackwardDesc()
    desc.forward.headDim = 128
    for deterministic in (0, 1, 0, 1):
        desc.deterministic = deterministic
        assert _ops._backward_uses_workspace(0, desc) == (not deterministic)
    desc.forward.headDim = 64
    assert _ops._backward_uses_workspace(0, desc) is False
    assert asked == [(128, 0), (128, 1), (64, 1)]


def test_flashcore_chip_is_checked_by_name(monkeypatch):
    # Checked before the driver is looked for: the error names the
    # variable, its value and the chips there are.
    monkeypatch.setattr(_capi, "_jits", {})
    monkeypatch.setenv("FLASHCORE_CHIP", "sm_90")
    with pytest.raises(flashcore.FlashCoreError) as error:
        _capi.jit(0)
    message = str(error.value)
    assert "with FLASHCORE_CHIP=sm_90:" in message
    assert "expected sm_80 or sm_90a" in message


def test_a_loss_of_the_lse_is_a_clear_error():
    q = meta(1, 64, 4, 64).requires_grad_()
    o, lse = flashcore.attention(q, q, q, return_lse=True)
    with pytest.raises(NotImplementedError, match="detach"):
        (o.sum() + lse.sum()).backward()


def test_no_second_derivative():
    q = meta(1, 64, 4, 64).requires_grad_()
    dq, = torch.autograd.grad(flashcore.attention(q, q, q).sum(), q,
                              create_graph=True)
    with pytest.raises(NotImplementedError, match="second derivative"):
        dq.sum().backward()


def test_no_grad_needs_no_backward():
    q = meta(1, 64, 4, 64).requires_grad_()
    with torch.no_grad():
        assert flashcore.attention(q, q, q).grad_fn is None
