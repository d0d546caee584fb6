"""What the fmha-aot GPU checks (aot_backward.py, aot_kvcache.py) share: the
ctypes mirror of the leading fields of a generated kernel_info, stride
arrays, and the loop that loads each shim library (aot_grad_shim.c,
aot_kvcache_shim.c: shim_load, shim_message, shim_arch, shim_num_kernels,
shim_kernel) and runs its kernels' checks."""

import ctypes
import sys

import torch

from check_table import check, print_table


class KernelInfo(ctypes.Structure):
    """The leading fields of <prefix>_kernel_info (fmha_kernels.h)."""
    _fields_ = [("name", ctypes.c_char_p), ("op", ctypes.c_char_p),
                ("dtype", ctypes.c_char_p), ("head_dim", ctypes.c_int),
                ("value_head_dim", ctypes.c_int),
                ("causal", ctypes.c_int), ("lse", ctypes.c_int),
                ("dq_accum", ctypes.c_int), ("dq_order", ctypes.c_int),
                ("has_window", ctypes.c_int),
                ("window", ctypes.c_int64 * 2), ("scale", ctypes.c_float)]


Strides1, Strides2, Strides3, Strides4, Strides5 = (
    ctypes.c_int64 * n for n in range(1, 6))

DTYPES = {b"bf16": torch.bfloat16, b"f16": torch.float16}


def bhsd_strides(t):
    """The (batch, head, sequence, dim) strides of a [B, S, H, D] view."""
    s = t.stride()
    return (s[0], s[2], s[1], s[3])


def open_library(path):
    """The shim at path, with the result types of its common functions."""
    lib = ctypes.CDLL(path)
    lib.shim_message.restype = ctypes.c_char_p
    lib.shim_arch.restype = ctypes.c_char_p
    lib.shim_kernel.restype = ctypes.POINTER(KernelInfo)
    lib.shim_kernel.argtypes = [ctypes.c_int]
    return lib


def launched(status, lib):
    """Raises with the module's message where a launcher failed."""
    if status != 0:
        raise RuntimeError(f"launch status {status}: "
                           f"{lib.shim_message().decode()}")


def check_libraries(paths, prepare, check_kernel):
    """For each shim library in paths: opens it (prepare(lib) sets what only
    its script calls), checks that it loads its cubin, then runs
    check_kernel(lib, arch, k, info) on each of its kernels."""
    for path in paths:
        lib = open_library(path)
        prepare(lib)
        status = lib.shim_load()
        arch = lib.shim_arch().decode()

        def loaded():
            if status != 0:
                raise RuntimeError(lib.shim_message().decode())
            return f"cubin {arch}"
        check(f"{path}: load", loaded)
        if status != 0:
            continue
        for k in range(lib.shim_num_kernels()):
            check_kernel(lib, arch, k, lib.shim_kernel(k).contents)


def main(table, prepare, check_kernel):
    """check_libraries over the command line's libraries on the primary
    CUDA context (current here, as the shims' modules need), seed 0; the
    table named \p table last. Returns the exit status."""
    torch.manual_seed(0)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    check_libraries(sys.argv[1:], prepare, check_kernel)
    return print_table(table)
