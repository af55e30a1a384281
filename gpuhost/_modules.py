"""The Python side of Module and Kernel (csrc/cumodule.c, csrc/kernel.c): reading an
image (a path, PTX text, cubin, fatbin, CompiledCode), the parameter types in PTX, arrays
over module globals, and the device pointer of a foreign array passed to a kernel.
"""
import os
import re

import numpy as np

from . import _core

_ELF_MAGIC = b"\x7fELF"
_FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian
_LTOIR_MAGICS = (b"\xed\x43\x4e\x7f", b"BC\xc0\xde")

_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)")
_PARAM_TYPE = re.compile(r"\.([usbf])(8|16|32|64)\b")
_PARAM_ALIGN = re.compile(r"\.align\s+(\d+)")
_PARAM_ARRAY = re.compile(r"\[(\d+)\]")


def ptx_param_types(ptx):
    """{entry name: ((kind, size, align), ...)} for every kernel in the PTX text; kind is
    'f' (floating point), 'i' (integer or pointer) or 's' (an aggregate passed as bytes)."""
    kernels = {}
    for match in _ENTRY.finditer(ptx):
        params = []
        for decl in match.group(2).split(","):
            decl = decl.strip()
            if not decl:
                continue
            typ = _PARAM_TYPE.search(decl)
            if typ is None:
                params.append(("?", 0, 1))
                continue
            width = int(typ.group(2)) // 8
            count = _PARAM_ARRAY.search(decl)
            align = _PARAM_ALIGN.search(decl)
            if count is not None:
                params.append(("s", width * int(count.group(1)),
                               int(align.group(1)) if align else width))
            else:
                # a scalar is aligned to its width (a pointer's .align is its pointee's)
                params.append(("f" if typ.group(1) == "f" else "i", width, width))
        kernels[match.group(1)] = tuple(params)
    return kernels


def _looks_like_ptx_text(text):
    head = text.lstrip()[:4096]
    return head.startswith(("//", ".version", ".target")) or ".version" in head


def _read(image):
    """The bytes of `image` and where they came from (for messages)."""
    if isinstance(image, os.PathLike) or (isinstance(image, str) and not _looks_like_ptx_text(image)):
        path = os.fspath(image)
        try:
            with open(path, "rb") as f:
                return f.read(), path
        except OSError as e:
            raise FileNotFoundError(
                e.errno, "cannot read the module image %r: %s" % (path, e.strerror), path) from None
    if isinstance(image, str):
        return image.encode(), "PTX text"
    try:
        return bytes(memoryview(image)), "the image"
    except TypeError:
        raise TypeError("Module() takes PTX (str or bytes), cubin or fatbin bytes, a "
                        "CompiledCode, or a file path; not %s" % type(image).__name__) from None


def describe(image):
    """(data, param_types, lowered_names) for Module(image): the bytes to load, the
    kernels' parameter types where PTX says them, and the compile's lowered names."""
    data, origin = _read(image)
    lowered = getattr(image, "lowered_names", None) or None
    types = getattr(image, "param_types", None)
    ptx = getattr(image, "ptx", None)
    if not data:
        raise ValueError("%s is empty: nothing to load" % origin)
    if data.startswith(_LTOIR_MAGICS):
        raise ValueError("%s is LTO-IR, which the driver cannot load: compile to cubin or PTX"
                         % origin)
    if data.startswith(_ELF_MAGIC) or data.startswith(_FATBIN_MAGIC):
        if types is None and isinstance(ptx, (str, bytes)):
            types = ptx_param_types(ptx if isinstance(ptx, str) else ptx.decode("utf-8", "replace"))
        return data, types, lowered
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or not _looks_like_ptx_text(text) or "\0" in text.rstrip("\0"):
        raise ValueError("%s is not PTX, a cubin or a fatbin (it starts with %r)"
                         % (origin, data[:16]))
    if types is None:
        types = ptx_param_types(text)
    return data, types, lowered


def global_array(module, name, raw, dtype, shape):
    """The DeviceArray get_global() returns over a module variable of raw = (ptr, size)."""
    ptr, size = raw
    dtype = np.dtype(np.uint8 if dtype is None else dtype)
    if shape is None:
        if size % dtype.itemsize:
            raise ValueError("global %r is %d bytes, not a whole number of %s (%d bytes)"
                             % (name, size, dtype, dtype.itemsize))
        shape = (size // dtype.itemsize,)
    elif isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    else:
        shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed: %r" % (shape,))
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes > size:
        raise ValueError("global %r is %d bytes; shape %r of %s needs %d"
                         % (name, size, shape, dtype, nbytes))
    strides = np.empty(shape, dtype=dtype, order="C").strides if nbytes else (dtype.itemsize,) * len(shape)
    return _core.make_array(module, ptr, shape, strides, dtype, context=module.context)


def _stream_handle(stream):
    """The CUstream of a launch's stream= argument, as an int (0: the default stream)."""
    if stream is None or (isinstance(stream, int) and stream == 0):
        return 0
    for attr in ("handle", "ptr", "cuda_stream"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    if hasattr(stream, "__cuda_stream__"):
        return stream.__cuda_stream__()[1]
    return int(stream)


def _order_after(producer, stream):
    """Make work queued next on `stream` wait for what is queued on `producer` now."""
    if producer in (1, 2) and _stream_handle(stream) in (0, 1):
        return  # the legacy default stream, and the launch is on it too
    if producer == _stream_handle(stream):
        return
    ev = _core.event(timing=False)
    ev.record(_core.external_stream(producer) if producer not in (1, 2) else
              (_core.legacy_default_stream() if producer == 1 else
               _core.per_thread_default_stream()))
    ev.wait(stream)


def foreign_pointer(obj, stream):
    """(device pointer, device id or -1 where unknown) of a kernel argument that exports the
    CUDA array interface or DLPack, with the launch stream ordered after the exporter's
    stream; None when `obj` exports neither."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        ptr = cai["data"][0]
        producer = cai.get("stream") if cai.get("version", 0) >= 3 else None
        if producer is not None:
            _order_after(producer, stream)
        return ptr or 0, -1
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        from ._arrays import from_dlpack
        arr = from_dlpack(obj)
        return arr.ptr, arr.device.id
    return None
