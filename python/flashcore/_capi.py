"""FlashCore's C API (include/fmha-c/FlashCore.h) through ctypes.

libflashcore.so carries LLVM, MLIR and the PTX compiler and exports only the
C API, so this module is all the binding there is: nothing is compiled
against Python or torch, and one wheel serves every Python 3 and torch.
The descriptor structs below mirror the header field for field; the
attention descriptor is packed with struct.pack_into from a layout read off
its ctypes definition (one definition, and no per-field ctypes setattr on
the hot path).
"""

import ctypes
import os
import struct
import threading

# include/fmha-c/FlashCore.h: fmhaStatus.
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_FAILED = 2
ERROR_NOT_LOADED = 3

# fmhaCallFlags.
CALL_DEFAULT = 0
CALL_LOADED_ONLY = 1
CALL_PREPARE_ONLY = 2

# fmhaElementType.
BF16 = 0
F16 = 1
F32 = 2

# fmhaResampleMode, by the names fmha.resample's `mode` uses.
RESAMPLE_MODES = {"linear": 0, "nearest": 1, "previous": 2}


class FlashCoreError(RuntimeError):
    """A FlashCore call failed; the message is the C API's."""


class InvalidArgumentError(FlashCoreError, ValueError):
    """Bad sizes, strides, alignment or attributes (FMHA_ERROR_INVALID_ARGUMENT)."""


class NotLoadedError(FlashCoreError):
    """A call inside CUDA graph capture whose kernel was not loaded before
    the capture (FMHA_ERROR_NOT_LOADED): run the call once before capturing,
    or flashcore.precompile it."""


_ERRORS = {ERROR_INVALID_ARGUMENT: InvalidArgumentError,
           ERROR_NOT_LOADED: NotLoadedError}


class JitOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int),
                ("chip", ctypes.c_char_p),
                ("cacheDirectory", ctypes.c_char_p),
                ("cacheMaxBytes", ctypes.c_ulonglong),
                ("dumpDirectory", ctypes.c_char_p),
                ("seedDirectory", ctypes.c_char_p)]


_Strides = ctypes.c_longlong * 3


class AttentionDesc(ctypes.Structure):
    _fields_ = [("elementType", ctypes.c_int),
                ("headDim", ctypes.c_uint),
                ("causal", ctypes.c_int),
                ("scale", ctypes.c_float),
                ("hasWindow", ctypes.c_int),
                ("windowLeft", ctypes.c_longlong),
                ("windowRight", ctypes.c_longlong),
                ("batch", ctypes.c_longlong),
                ("queryHeads", ctypes.c_longlong),
                ("kvHeads", ctypes.c_longlong),
                ("querySeq", ctypes.c_longlong),
                ("keySeq", ctypes.c_longlong),
                ("q", ctypes.c_void_p),
                ("k", ctypes.c_void_p),
                ("v", ctypes.c_void_p),
                ("o", ctypes.c_void_p),
                ("lse", ctypes.c_void_p),
                ("qStride", _Strides),
                ("kStride", _Strides),
                ("vStride", _Strides),
                ("oStride", _Strides),
                ("lseStride", _Strides),
                ("softcap", ctypes.c_float),
                ("sinks", ctypes.c_void_p),
                ("workspace", ctypes.c_void_p),
                ("workspaceBytes", ctypes.c_size_t),
                ("keyLengths", ctypes.c_void_p),
                ("pageTable", ctypes.c_void_p),
                ("pages", ctypes.c_longlong),
                ("pageSize", ctypes.c_longlong),
                ("queryOffsets", ctypes.c_void_p),
                ("keyOffsets", ctypes.c_void_p),
                ("maxQueryLength", ctypes.c_longlong),
                ("valueHeadDim", ctypes.c_uint),
                ("maxKeyLength", ctypes.c_longlong)]


class AttentionBackwardDesc(ctypes.Structure):
    _fields_ = [("forward", AttentionDesc),
                ("dout", ctypes.c_void_p),
                ("dq", ctypes.c_void_p),
                ("dk", ctypes.c_void_p),
                ("dv", ctypes.c_void_p),
                ("delta", ctypes.c_void_p),
                ("doutStride", _Strides),
                ("dqStride", _Strides),
                ("dkStride", _Strides),
                ("dvStride", _Strides),
                ("deltaStride", _Strides),
                ("workspace", ctypes.c_void_p),
                ("workspaceBytes", ctypes.c_size_t),
                ("deterministic", ctypes.c_int)]


class MergeDesc(ctypes.Structure):
    _fields_ = [("elementType", ctypes.c_int),
                ("headDim", ctypes.c_uint),
                ("states", ctypes.c_longlong),
                ("batch", ctypes.c_longlong),
                ("heads", ctypes.c_longlong),
                ("querySeq", ctypes.c_longlong),
                ("outs", ctypes.c_void_p),
                ("lses", ctypes.c_void_p),
                ("o", ctypes.c_void_p),
                ("lse", ctypes.c_void_p),
                ("outsStride", ctypes.c_longlong * 4),
                ("lsesStride", ctypes.c_longlong * 4),
                ("oStride", _Strides),
                ("lseStride", _Strides)]


class ResampleStream(ctypes.Structure):
    _fields_ = [("times", ctypes.c_void_p),
                ("values", ctypes.c_void_p),
                ("lengths", ctypes.c_void_p),
                ("samples", ctypes.c_longlong),
                ("features", ctypes.c_uint)]


class ResampleDesc(ctypes.Structure):
    _fields_ = [("elementType", ctypes.c_int),
                ("mode", ctypes.c_int),
                ("batch", ctypes.c_longlong),
                ("targetCount", ctypes.c_longlong),
                ("targets", ctypes.c_void_p),
                ("out", ctypes.c_void_p),
                ("numStreams", ctypes.c_int),
                ("streams", ctypes.POINTER(ResampleStream))]


def _struct_layout(cls):
    """A struct.Struct that packs cls's fields, in order, at the offsets
    ctypes gives them (native alignment, explicit padding)."""
    codes = {ctypes.c_int: "i", ctypes.c_uint: "I", ctypes.c_float: "f",
             ctypes.c_longlong: "q", ctypes.c_void_p: "Q",
             ctypes.c_size_t: "Q"}
    layout, end = "=", 0
    for name, ctype in cls._fields_:
        offset = getattr(cls, name).offset
        layout += "x" * (offset - end)
        if issubclass(ctype, ctypes.Array):
            layout += str(ctype._length_) + codes[ctype._type_]
        else:
            layout += codes[ctype]
        end = offset + ctypes.sizeof(ctype)
    layout += "x" * (ctypes.sizeof(cls) - end)
    packer = struct.Struct(layout)
    assert packer.size == ctypes.sizeof(cls), (layout, ctypes.sizeof(cls))
    return packer


ATTENTION_DESC = _struct_layout(AttentionDesc)


def library_path():
    """libflashcore.so: FLASHCORE_LIBRARY when set (a build tree's
    build/lib/libflashcore.so), else the one installed beside this module."""
    return os.environ.get("FLASHCORE_LIBRARY") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "libflashcore.so")


_lib = None
_lib_lock = threading.Lock()


def lib():
    """The loaded C API, its prototypes declared."""
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise FlashCoreError(
                    f"FlashCore's library is not at {path}: reinstall the "
                    "flashcore package (pip install .), or point "
                    "FLASHCORE_LIBRARY at a build's lib/libflashcore.so")
            handle = ctypes.CDLL(path)
            _declare(handle)
            _lib = handle
    return _lib


def _declare(h):
    P, status = ctypes.c_void_p, ctypes.c_int
    h.fmhaVersion.restype = ctypes.c_char_p
    h.fmhaVersion.argtypes = []
    h.fmhaDoctor.restype = ctypes.c_int
    h.fmhaDoctor.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    h.fmhaFreeMessage.restype = None
    h.fmhaFreeMessage.argtypes = [P]
    h.fmhaJitOptionsInit.restype = None
    h.fmhaJitOptionsInit.argtypes = [ctypes.POINTER(JitOptions)]
    h.fmhaJitCreate.restype = status
    h.fmhaJitCreate.argtypes = [ctypes.POINTER(JitOptions),
                                ctypes.POINTER(P), ctypes.POINTER(P)]
    h.fmhaJitDestroy.restype = None
    h.fmhaJitDestroy.argtypes = [P]
    # The descriptors go by address (a packed buffer or a ctypes struct).
    for name in ("fmhaAttentionEx", "fmhaResampleEx", "fmhaMergeAttention",
                 "fmhaAttentionBackward"):
        fn = getattr(h, name)
        fn.restype = status
        fn.argtypes = [P, P, P, ctypes.c_uint, ctypes.POINTER(P)]
    for name in ("fmhaAttentionPrecompile", "fmhaAttentionBackwardPrecompile"):
        fn = getattr(h, name)
        fn.restype = status
        fn.argtypes = [P, P, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(P)]
    h.fmhaAttentionWorkspaceSize.restype = status
    h.fmhaAttentionWorkspaceSize.argtypes = [
        P, P, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(P)]
    h.fmhaAttentionBackwardWorkspaceSize.restype = status
    h.fmhaAttentionBackwardWorkspaceSize.argtypes = [
        P, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(P)]
    h.fmhaAttentionBackwardFastestWorkspaceSize.restype = status
    h.fmhaAttentionBackwardFastestWorkspaceSize.argtypes = [
        P, P, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(P)]
    h.fmhaAttentionBackwardUsesWorkspace.restype = status
    h.fmhaAttentionBackwardUsesWorkspace.argtypes = [
        P, P, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(P)]
    for name in ("fmhaAttentionCheck", "fmhaResampleCheck"):
        fn = getattr(h, name)
        fn.restype = status
        fn.argtypes = [P, ctypes.POINTER(P)]


def take_message(message):
    """The text of a C API message (a c_void_p), freed."""
    if not message.value:
        return ""
    text = ctypes.string_at(message.value).decode("utf-8", "replace")
    lib().fmhaFreeMessage(message.value)
    return text


def raise_for(status, message):
    """Raises the error for a failed call's status and message."""
    raise _ERRORS.get(status, FlashCoreError)(take_message(message))


def call(fn, *args):
    """fn(*args, &message), raising the error a failed status names. (The
    per-call attention path keeps its message slot per thread instead.)"""
    message = ctypes.c_void_p()
    status = fn(*args, ctypes.byref(message))
    if status != SUCCESS:
        raise_for(status, message)


def version():
    return lib().fmhaVersion().decode()


def doctor():
    """(fmha-doctor's report, whether the JIT can work here)."""
    report = ctypes.c_void_p()
    can_work = lib().fmhaDoctor(ctypes.byref(report))
    return take_message(report), bool(can_work)


_jits = {}
_jits_lock = threading.Lock()


def chip_override():
    """FLASHCORE_CHIP when set: the chip ("sm_80" or "sm_90a") whose kernels
    every JIT of this process compiles, where by default each device gets
    its best. "sm_80" runs the Ampere kernels on a Hopper GPU too, to test
    or time them there. None when unset."""
    return os.environ.get("FLASHCORE_CHIP") or None


def jit(device):
    """The JIT of CUDA device ordinal device, created on first use; its
    error says what is missing (the words of fmha-doctor)."""
    handle = _jits.get(device)
    if handle is not None:
        return handle
    with _jits_lock:
        handle = _jits.get(device)
        if handle is None:
            options = JitOptions()
            lib().fmhaJitOptionsInit(ctypes.byref(options))
            options.device = device
            chip = chip_override()
            if chip:
                options.chip = chip.encode()
            # Kernels shipped in the wheel (fmha-seed at build time): a
            # fresh process with an empty disk cache loads them without a
            # compile.
            seed = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "kernels")
            if os.path.isdir(seed):
                options.seedDirectory = seed.encode()
            created, message = ctypes.c_void_p(), ctypes.c_void_p()
            status = lib().fmhaJitCreate(ctypes.byref(options),
                                         ctypes.byref(created),
                                         ctypes.byref(message))
            if status != SUCCESS:
                chosen = f" with FLASHCORE_CHIP={chip}" if chip else ""
                raise FlashCoreError(
                    f"FlashCore cannot run kernels on CUDA device {device}"
                    f"{chosen}: {take_message(message)} (flashcore.doctor() "
                    "reports the driver, the GPUs and the fix)")
            handle = _jits[device] = created.value
    return handle
