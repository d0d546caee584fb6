"""FlashCore for Python and PyTorch.

    import flashcore
    o = flashcore.attention(q, k, v, causal=True)    # [B, S, H, D] f16/bf16

Kernels are compiled by FlashCore's own compiler, carried in this package's
libflashcore.so, and loaded through the NVIDIA driver: the driver is all it
needs at run time (no CUDA toolkit, no C++ build against torch). The ops are
torch custom ops (torch.ops.flashcore.attention, .attention_with_kvcache,
.attention_varlen, .merge_attention, .resample), so
torch.compile(fullgraph=True) traces them and CUDA graphs capture them.
flashcore.doctor() says what this machine can run.
"""

from ._capi import (FlashCoreError, InvalidArgumentError, NotLoadedError)
from ._capi import version as _version
from ._capi import doctor as _doctor

try:
    import torch as _torch  # noqa: F401
except ImportError:  # doctor() and version() need no torch.
    _torch = None

if _torch is not None:
    from ._ops import (attention, attention_varlen, attention_with_kvcache,
                       merge_attention, precompile, precompile_attention,
                       resample)
else:
    def __getattr__(name):
        if name in ("attention", "attention_with_kvcache", "attention_varlen",
                    "merge_attention", "resample", "precompile",
                    "precompile_attention"):
            raise ImportError(f"flashcore.{name} needs torch, which is not "
                              "installed: pip install torch")
        raise AttributeError(f"module 'flashcore' has no attribute {name!r}")

__all__ = ["attention", "attention_with_kvcache", "attention_varlen",
           "merge_attention",
           "resample", "precompile", "precompile_attention",
           "doctor", "version",
           "FlashCoreError", "InvalidArgumentError", "NotLoadedError"]


def version():
    """FlashCore's version (the compiler's: it is part of every cache key)."""
    return _version()


def doctor():
    """fmha-doctor's report on this machine, as text: the driver, each GPU
    and which chips run on it, the PTX compiler, the cache, and each problem
    with its fix. Needs no GPU."""
    return _doctor()[0]
