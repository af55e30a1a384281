"""The code images behind gpuhost.Module (csrc/launch/code_image.c calls in here): reading an image
(a path, PTX text, cubin, fatbin, CompiledCode) and telling which it is, the kernels'
parameter types its PTX declares, and the arrays Module.get_global() makes over its globals.
"""
import os
import re

import numpy as np

from . import _core

ELF_MAGIC = b"\x7fELF"
FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian
LTOIR_MAGICS = (b"\xed\x43\x4e\x7f", b"BC\xc0\xde")

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
    if data.startswith(LTOIR_MAGICS):
        raise ValueError("%s is LTO-IR, which the driver cannot load: compile to cubin or PTX"
                         % origin)
    if data.startswith(ELF_MAGIC) or data.startswith(FATBIN_MAGIC):
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


# Module(image) and Module.get_global() call these (csrc/launch/code_image.c): registered once.
_core._set_helpers(describe_image=describe, global_array=global_array)
