"""The code images behind gpuhost.Module (csrc/launch/code_image.c calls in here): reading an image
(a path, PTX text, cubin, fatbin, CompiledCode) and telling which it is, the kernels'
parameter types its PTX declares, and the arrays Module.get_global() makes over its globals.
"""
import os
import re

import numpy as np

from . import _core, _methods

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


def kernel_param_types(symbol):
    """A C++ kernel's parameter types from its mangled name (gpuhost/_demangle.py, imported
    on the first such kernel): what csrc/launch/kernel_types.c checks arguments against."""
    from ._demangle import kernel_param_types as read

    return read(symbol)


# ---- pycuda's prepared launches, attached to Kernel (the format is read by gpuhost.kernels) ----


@_methods.method(_core.Kernel)
def prepare(self, arg_types, texrefs=None):
    """Declare the parameters' types, as pycuda's ``Function.prepare``; returns the kernel.

    `arg_types` is pycuda's: a struct format string (``"PPi"``: two pointers and an int;
    counts repeat, ``"16s"`` is a 16-byte struct) or a sequence of NumPy scalar types,
    dtypes and format codes (``[np.intp, np.float32, "i"]``). One code per parameter. The
    sequence may also hold C types spelt out (``["const float *", "unsigned int"]``),
    which pycuda's codes cannot say: a pointer's element type is then checked too.

    Every launch then checks its arguments against the types, whichever way it is made
    (``prepared_call``, ``kernel[grid, block](...)``, ``launch``): a Python int must be in
    its C type's range (OverflowError), a float cannot go to an integer, an array must go
    to a pointer (``"P"``; or to an 8-byte integer, as pycuda packs an allocation's
    address). A C++ kernel's mangled name says its types already; where it says more
    (``float *`` for a ``"P"``) that stays.

    Raises
    ------
    TypeError
        The format has another number of codes than the kernel has parameters, or a code
        of another size or kind than its parameter.
    ValueError
        A character pycuda's prepare does not take.
    NotImplementedError
        `texrefs`: texture references were removed in CUDA 12.

    Examples
    --------
    >>> ptx = (".version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry scale("
    ...        ".param .u64 x, .param .f32 a, .param .u32 n) { ret; }")  # scale(float *, float, int)
    >>> scale = gpuhost.Module(ptx).get_function("scale")  # as SourceModule's extern "C" one
    >>> scale.param_types is None                          # its name says nothing
    True
    >>> scale.prepare("Pfi").param_types
    ('void *', 'float', 'int')
    >>> x = gpuhost.to_device(np.ones(1000, np.float32))
    >>> scale.prepared_call((4, 1), (256, 1, 1), x, 2.0, 1000)
    >>> scale.prepared_call((4, 1), (256, 1, 1), x, 2.0, 2**40)
    Traceback (most recent call last):
        ...
    OverflowError: scale(): parameter 2 (int) cannot hold 1099511627776
    >>> scale.prepare(["float *", "float", "int"]).param_types
    ('float *', 'float', 'int')
    >>> scale[4, 256](gpuhost.to_device(np.ones(1000)), 2.0, 1000)  # float64
    Traceback (most recent call last):
        ...
    TypeError: scale(): parameter 0 (float *) takes an array of float32, not a gpuhost.DeviceArray of float64
    """
    from .kernels import _prepare

    return _prepare(self, arg_types, texrefs)


@_methods.method(_core.Kernel)
def prepared_call(self, grid, block, *args, shared_size=0):
    """Launch on the default stream, as pycuda's: ``prepared_call(grid, block, *args,
    shared_size=0)``; the same as ``kernel[grid, block, None, shared_size](*args)``.

    Examples
    --------
    >>> ptx = (".version 7.0\\n.target sm_70\\n.address_size 64\\n.visible .entry scale("
    ...        ".param .u64 x, .param .f32 a, .param .u32 n) { ret; }")  # scale(float *, float, int)
    >>> scale = gpuhost.Module(ptx).get_function("scale").prepare("Pfi")
    >>> x = gpuhost.to_device(np.ones(1000, np.float32))
    >>> scale.prepared_call((4, 1), (256, 1, 1), x, 2.0, 1000)
    """
    self[grid, block, None, shared_size](*args)


@_methods.method(_core.Kernel)
def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
    """Launch on `stream` (None: the default stream), as pycuda's:
    ``prepared_async_call(grid, block, stream, *args, shared_size=0)``.

    Examples
    --------
    >>> ptx = (".version 7.0\\n.target sm_70\\n.address_size 64\\n"
    ...        ".visible .entry fill(.param .u64 x, .param .u32 n) { ret; }")
    >>> fill = gpuhost.Module(ptx).get_function("fill").prepare([np.intp, np.uint32])
    >>> s = gpuhost.stream()
    >>> x = gpuhost.device_array(1000, np.float32, stream=s)
    >>> fill.prepared_async_call(4, 256, s, x, 1000)
    >>> s.synchronize()
    """
    self[grid, block, stream, shared_size](*args)


@_methods.method(_core.Kernel)
def prepared_timed_call(self, grid, block, *args, shared_size=0):
    """Launch on the default stream between two events, as pycuda's; returns a function
    that waits for the kernel and gives its time in seconds.

    Examples
    --------
    >>> ptx = ".version 7.0\\n.target sm_70\\n.visible .entry idle() { ret; }"
    >>> idle = gpuhost.Module(ptx).get_function("idle").prepare("")
    >>> seconds = idle.prepared_timed_call(1, 32)()
    >>> seconds >= 0
    True
    """
    start, end = _core.event(), _core.event()
    start.record()
    self[grid, block, None, shared_size](*args)
    end.record()

    def get_call_time():
        end.synchronize()
        return start.elapsed_time(end) * 1e-3

    return get_call_time


# Module(image), Module.get_global() and Module.get_function() call these
# (csrc/launch/code_image.c, kernel_types.c): registered once.
_core._set_helpers(describe_image=describe, global_array=global_array,
                   kernel_param_types=kernel_param_types)
