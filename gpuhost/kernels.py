"""Source-level conveniences over Module and Kernel: pycuda's SourceModule, CuPy's
RawKernel, the JIT Linker, and launch().

    mod = gpuhost.SourceModule(r'''
    __global__ void scale(float *x, float a, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a;
    }''')
    scale = mod.get_function("scale")
    scale[blocks, 256](d_x, 2.0, n)
"""
import os
import threading

from . import _core
from ._core import Kernel, LaunchConfig, Module
from ._code_images import ptx_param_types

__all__ = ["Kernel", "LaunchConfig", "Linker", "Module", "RawKernel", "SourceModule", "launch"]

# ---- Kernel.prepare: pycuda's declaration of the parameters' types ----

# struct's codes as pycuda's prepare() takes them (its _pvt_struct, native sizes), and
# NumPy's dtype chars beside them: (C name, ctype, size); ctype as kernel_types.c takes it,
# '' for a value checked by size alone (complex numbers, bytes)
_FORMAT_CODES = {
    "b": ("signed char", "i", 1), "B": ("unsigned char", "u", 1), "c": ("char", "n", 1),
    "?": ("bool", "b", 1), "h": ("short", "i", 2), "H": ("unsigned short", "u", 2),
    "i": ("int", "i", 4), "I": ("unsigned int", "u", 4), "l": ("long", "i", 8),
    "L": ("unsigned long", "u", 8), "q": ("long long", "i", 8),
    "Q": ("unsigned long long", "u", 8), "n": ("ssize_t", "i", 8), "N": ("size_t", "u", 8),
    "p": ("intptr_t", "i", 8), "e": ("__half", "f", 2), "f": ("float", "f", 4),
    "d": ("double", "f", 8), "F": ("float2 (complex64)", "", 8),
    "D": ("double2 (complex128)", "", 16), "P": ("void *", "p", 8),
}


def _declarations(arg_types):
    """[(code, size, declared)] of pycuda's `arg_types`, one per parameter: a format string
    as pycuda's prepare takes it; else, item by item, a NumPy scalar type's or dtype's char
    (a record dtype is its bytes, "Ns"), a str as it is, anything else a pointer-sized
    unsigned int.  gpuhost takes a C type spelt out too ("float *", "unsigned int"): its
    `declared` is kernel_types.c's tuple for it (else None)."""
    if isinstance(arg_types, str):
        return [(code, size, None) for code, size in _format_items(arg_types)]
    import numpy as np

    from ._demangle import declared_type

    out = []
    for t in arg_types:
        declared = declared_type(t) if isinstance(t, str) else None
        if declared is not None:
            out.append((t, declared[4], declared))
            continue
        if isinstance(t, str):
            fmt = t
        elif isinstance(t, np.dtype) or (isinstance(t, type) and issubclass(t, np.generic)):
            dt = np.dtype(t)
            fmt = "%ds" % dt.itemsize if dt.char == "V" else dt.char
        else:
            fmt = np.dtype(np.uintp).char
        out.extend((code, size, None) for code, size in _format_items(fmt))
    return out


def _format_items(fmt):
    """[(code, size)] of a struct format: counts repeat a code ("3i"), or give the bytes
    of an "s" item ("16s"); pad bytes ("x") are dropped, since the kernel's real offsets
    place each argument; ValueError for anything pycuda's packer would refuse."""
    items, i = [], 0
    body = fmt[1:] if fmt.startswith("@") else fmt
    while i < len(body):
        c = body[i]
        if c.isspace():
            i += 1
            continue
        j = i
        while j < len(body) and body[j].isdigit():
            j += 1
        count = int(body[i:j]) if j > i else 1
        if j == len(body):
            raise ValueError("prepare(): the format %r ends in a count" % fmt)
        code = body[j]
        if code == "s":
            items.append(("%ds" % count, count))
        elif code == "x":
            pass
        elif code in _FORMAT_CODES and code != "p":
            items.extend([(code, _FORMAT_CODES[code][2])] * count)
        else:
            raise ValueError("prepare(): %r in the format %r is no type code pycuda's prepare "
                             "takes (b B c ? h H i I l L q Q n N e f d F D P, Ns)" % (code, fmt))
        i = j + 1
    return items


def _prepared_type(kernel, index, code, size, declared, param):
    """The type kernel_types.c takes for parameter `index` declared as `code` (or as the C
    type `declared`), checked against what the driver and the PTX say of it (param =
    (offset, size, kind))."""
    if declared is not None:
        name, ctype = declared[0], declared[1]
    elif code.endswith("s"):
        name, ctype = "%d bytes" % size, ""
    else:
        name, ctype, _ = _FORMAT_CODES[code]
    kind = param[2]
    what = "%s(): parameter %d is %d bytes" % (kernel.name, index, param[1])
    if size != param[1]:
        raise TypeError("prepare(): %s, not %d (%r, %s)" % (what, size, code, name))
    if kind != "?" and ctype and (kind == "f") != (ctype == "f") and not (
            code == "e" and kind == "s"):
        kinds = {"f": "floating point", "i": "an integer or pointer", "s": "a struct"}
        raise TypeError("prepare(): %s of %s; %r is %s" % (what, kinds[kind], code, name))
    if declared is not None or not ctype:
        return declared  # a C type's own; None: checked by size alone
    # an 8-byte integer takes device arrays too, as pycuda packs an allocation's address
    elem = "A" if ctype in "iu" and size == 8 else ""
    return (name, ctype, elem, 0, size)


def _prepare(kernel, arg_types, texrefs=None):
    if texrefs:
        raise NotImplementedError("texture references were removed in CUDA 12; gpuhost has "
                                  "none (use texture objects, passed as an unsigned long long)")
    items = _declarations(arg_types)
    params = kernel.param_info
    if len(items) != len(params):
        raise TypeError("prepare(): %s() takes %d arguments; %r gives %d (one type per "
                        "parameter: a struct is 'Ns', its bytes)"
                        % (kernel.name, len(params), arg_types, len(items)))
    types = [_prepared_type(kernel, i, code, size, declared, param)
             for i, ((code, size, declared), param) in enumerate(zip(items, params))]
    # a C++ kernel's name says its types already: they stay where prepare() agrees on the
    # size (a "P" for a float * keeps the float *)
    if kernel.symbol.startswith("_Z"):
        from ._demangle import kernel_param_types

        known = kernel_param_types(kernel.symbol) or ()
        types = [k if k is not None and (t is None or t[4] == k[4]) else t
                 for t, k in zip(types, list(known) + [None] * len(types))]
    kernel._set_param_types(tuple(types))
    return kernel



def launch(kernel, grid, block, *args, stream=None, shared=0, cooperative=False, cluster=None):
    """Launch `kernel` over `grid` blocks of `block` threads with `args`.

    The same as ``kernel[grid, block, stream, shared](*args)``, with the launch options
    as keywords. The launch is asynchronous.

    Parameters
    ----------
    kernel : Kernel
        From `Module.get_function` (or `SourceModule.get_function`).
    grid, block : int or tuple of int
        Blocks in the grid and threads per block, 1 to 3 dimensions.
    *args
        The kernel's arguments: device arrays (passed as pointers), numpy scalars and
        Python numbers (converted to the parameter's type when the module knows it).
    stream : Stream, optional
        The stream to launch on; None (default) is the default stream.
    shared : int, optional
        Bytes of dynamic shared memory.
    cooperative : bool, optional
        A cooperative launch (grid-wide synchronization).
    cluster : int or tuple of int, optional
        Group blocks into thread-block clusters of this shape (compute capability 9.0+).

    Raises
    ------
    TypeError
        `kernel` is not a Kernel, or an argument cannot be passed.
    CudaAPIError
        The driver refused the launch (too many threads, too much shared memory...).

    Examples
    --------
    >>> ptx = gpuhost.compile_ptx(r'''extern "C" __global__
    ... void scale(float *x, float a, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] *= a;
    ... }''')
    >>> scale = gpuhost.Module(ptx).get_function("scale")
    >>> x = gpuhost.to_device(np.ones(1000, np.float32))
    >>> gpuhost.launch(scale, 4, 256, x, np.float32(2), np.int32(1000))  # doctest: +SKIP
    >>> x.copy_to_host()[:3]                                            # doctest: +SKIP
    array([2., 2., 2.], dtype=float32)
    """
    if not isinstance(kernel, Kernel):
        raise TypeError("launch() takes a Kernel (Module.get_function), not %s"
                        % type(kernel).__name__)
    kernel.configure(grid, block, stream, shared, cooperative=cooperative, cluster=cluster)(*args)


def _compile(source, options, name_expressions, kwargs):
    from .compiler import compile as nvrtc_compile
    return nvrtc_compile(source, "cubin", options=tuple(options),
                         name_expressions=tuple(name_expressions), **kwargs)


class SourceModule:
    """pycuda's SourceModule: CUDA C++ compiled with NVRTC and loaded into the current context.

    As in pycuda the source is wrapped in ``extern "C" { }`` so that kernels keep their
    plain names. The compiled cubin is cached (see `compile`).

    Parameters
    ----------
    source : str
        CUDA C++ source.
    options : iterable of str, optional
        NVRTC options.
    no_extern_c : bool, optional
        Do not wrap the source: for C++ (templates, name expressions).
    name_expressions : iterable of str, optional
        C++ names whose mangled names are wanted (see `compile`).
    **kwargs
        `compile`'s other keywords: cc, debug, lineinfo, fastmath, std, defines,
        include_dirs.

    Attributes
    ----------
    code : CompiledCode
        The cubin.
    module : Module
        The loaded module.

    Raises
    ------
    TypeError
        `source` is not a str.
    NvrtcError
        Compilation failed.

    Examples
    --------
    >>> mod = gpuhost.SourceModule(r'''
    ... __global__ void scale(float *x, float a, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] *= a;
    ... }''')                                           # doctest: +SKIP
    >>> scale = mod.get_function("scale")               # doctest: +SKIP
    >>> x = gpuhost.to_device(np.ones(1000, np.float32))
    >>> scale[4, 256](x, np.float32(2), np.int32(1000))  # doctest: +SKIP
    """

    def __init__(self, source, options=(), *, no_extern_c=False, name_expressions=(), **kwargs):
        if not isinstance(source, str):
            raise TypeError("SourceModule() takes the source as a str, not %s"
                            % type(source).__name__)
        if not no_extern_c:
            source = 'extern "C" {\n%s\n}\n' % source
        self.code = _compile(source, options, name_expressions, kwargs)
        self.module = Module(self.code)

    def get_function(self, name):
        """The `Kernel` named `name` (its ``extern "C"`` name), as pycuda's.

        Parameters
        ----------
        name : str
            The kernel's name.

        Returns
        -------
        Kernel
            Launched with ``kernel[grid, block](*args)`` or `launch`.

        Raises
        ------
        CudaAPIError
            ``CUDA_ERROR_NOT_FOUND``: the module has no such kernel.

        Examples
        --------
        >>> mod = gpuhost.SourceModule(r'''
        ... __global__ void scale(float *x, float a, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) x[i] *= a;
        ... }''')                                           # doctest: +SKIP
        >>> scale = mod.get_function("scale")               # doctest: +SKIP
        >>> scale.name, scale.num_params                    # doctest: +SKIP
        ('scale', 3)
        >>> x = gpuhost.to_device(np.ones(1000, np.float32))
        >>> scale[4, 256](x, np.float32(2), np.int32(1000))  # doctest: +SKIP
        """
        return self.module.get_function(name)

    def get_global(self, name):
        """The device address and size of the ``__device__`` variable `name`, as pycuda's.

        `Module.get_global` gives a DeviceArray over it instead.

        Parameters
        ----------
        name : str
            The variable's name.

        Returns
        -------
        tuple of int
            (device address, size in bytes).

        Raises
        ------
        CudaAPIError
            ``CUDA_ERROR_NOT_FOUND``: the module has no such variable.

        Examples
        --------
        >>> mod = gpuhost.SourceModule("__device__ int table[16];")  # doctest: +SKIP
        >>> ptr, size = mod.get_global("table")                     # doctest: +SKIP
        >>> size                                                    # doctest: +SKIP
        64
        >>> mod.module.get_global("table", np.int32).shape          # doctest: +SKIP
        (16,)
        """
        return self.module._get_global(name)

    @property
    def info_log(self):
        """The JIT compiler's information log from loading the module, a str.

        Usually empty, since the cubin NVRTC made needs no JIT compilation.

        Examples
        --------
        >>> mod = gpuhost.SourceModule("__global__ void k() {}")  # doctest: +SKIP
        >>> mod.info_log                                         # doctest: +SKIP
        ''
        """
        return self.module.info_log


class RawKernel:
    """CuPy's RawKernel: one kernel of CUDA C++ source, compiled and loaded on first use.

    Compiled (and cached) on first use on each device, and loaded there; the source is
    not wrapped, so a kernel found by a plain name needs ``extern "C"``.

    Parameters
    ----------
    code : str
        CUDA C++ source.
    name : str
        The kernel's name, or a name expression (``"scale<float>"``).
    options : iterable of str, optional
        NVRTC options.
    enable_cooperative_groups : bool, optional
        Launch cooperatively (grid-wide synchronization).
    **kwargs
        `compile`'s other keywords.

    Examples
    --------
    >>> k = gpuhost.RawKernel(r'''extern "C" __global__
    ... void scale(float *x, float a, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] *= a;
    ... }''', "scale")
    >>> x = gpuhost.to_device(np.ones(1000, np.float32))
    >>> k((4,), (256,), (x, np.float32(2), np.int32(1000)))   # doctest: +SKIP
    >>> k.num_regs                                            # doctest: +SKIP
    8
    """

    def __init__(self, code, name, options=(), *, enable_cooperative_groups=False, **kwargs):
        if not isinstance(code, str) or not isinstance(name, str):
            raise TypeError("RawKernel(code, name) takes two str")
        self.code, self.name, self.options = code, name, tuple(options)
        self.enable_cooperative_groups = enable_cooperative_groups
        self._compile_kwargs = kwargs
        self._kernels = {}
        self._lock = threading.Lock()

    def _is_expression(self):
        return "<" in self.name or "::" in self.name

    def compile(self):
        """Compile the source for the current device, or take it from the cache.

        `kernel` calls it on first use on each device; calling it first moves the
        compilation (and its errors) earlier.

        Returns
        -------
        CompiledCode
            The cubin.

        Raises
        ------
        NvrtcError
            Compilation failed; the message holds NVRTC's log.

        Examples
        --------
        >>> k = gpuhost.RawKernel(r'''extern "C" __global__
        ... void scale(float *x, float a, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) x[i] *= a;
        ... }''', "scale")
        >>> code = k.compile()
        >>> code.output, code.cc == gpuhost.get_current_device().compute_capability
        ('cubin', True)
        """
        names = (self.name,) if self._is_expression() else ()
        return _compile(self.code, self.options, names, self._compile_kwargs)

    @property
    def kernel(self):
        """The `Kernel` on the current device, compiled and loaded on first use there.

        Examples
        --------
        >>> k = gpuhost.RawKernel(r'''extern "C" __global__
        ... void scale(float *x, float a, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) x[i] *= a;
        ... }''', "scale")
        >>> kern = k.kernel                                  # doctest: +SKIP
        >>> kern.name, kern.num_params                       # doctest: +SKIP
        ('scale', 3)
        >>> x = gpuhost.to_device(np.ones(1000, np.float32))
        >>> kern[4, 256](x, np.float32(2), np.int32(1000))   # doctest: +SKIP
        """
        ctx = _core.current_context()
        key = (ctx.device.id, ctx)
        k = self._kernels.get(key)
        if k is None or k.module.unloaded:
            with self._lock:
                k = Module(self.compile()).get_function(self.name)
                _core._live_kept(k.module)  # cached by design: no leak for the leak check
                self._kernels[key] = k
        return k

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        """Launch, as CuPy's: ``k(grid, block, args, shared_mem=0, stream=None)``.

        `grid` and `block` are ints or tuples of 1 to 3 ints, `args` a tuple of the
        kernel's arguments, `shared_mem` the bytes of dynamic shared memory. TypeError if
        `args` is not a tuple or list.
        """
        if not isinstance(args, (tuple, list)):
            raise TypeError("RawKernel arguments are a tuple, not %s" % type(args).__name__)
        self.kernel.configure(grid, block, stream, shared_mem,
                              cooperative=self.enable_cooperative_groups)(*args)

    @property
    def attributes(self):
        """The kernel's attributes on the current device, as a dict.

        ``num_regs``, ``max_threads_per_block``, ``shared_size_bytes`` and the like, as
        CuPy's; each is also an attribute of the RawKernel. Reading them compiles and
        loads the kernel on first use.

        Examples
        --------
        >>> k = gpuhost.RawKernel(r'''extern "C" __global__
        ... void scale(float *x, float a, int n) {
        ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
        ...     if (i < n) x[i] *= a;
        ... }''', "scale")
        >>> k.attributes["max_threads_per_block"]           # doctest: +SKIP
        1024
        >>> k.num_regs == k.attributes["num_regs"]           # doctest: +SKIP
        True
        """
        k = self.kernel
        return {name: getattr(k, name) for name in _ATTRIBUTES}

    def __getattr__(self, name):
        if name in _ATTRIBUTES:
            return getattr(self.kernel, name)
        raise AttributeError("%s has no attribute %r" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        if name in ("max_dynamic_shared_size_bytes", "preferred_shared_memory_carveout"):
            setattr(self.kernel, name, value)
        else:
            object.__setattr__(self, name, value)


_ATTRIBUTES = ("num_regs", "shared_size_bytes", "const_size_bytes", "local_size_bytes",
               "max_threads_per_block", "ptx_version", "binary_version",
               "max_dynamic_shared_size_bytes", "preferred_shared_memory_carveout")

# CUjitInputType
_INPUT_CUBIN, _INPUT_PTX, _INPUT_FATBIN, _INPUT_OBJECT, _INPUT_LIBRARY = 0, 1, 2, 3, 4
_EXTENSIONS = {".cubin": _INPUT_CUBIN, ".ptx": _INPUT_PTX, ".fatbin": _INPUT_FATBIN,
               ".o": _INPUT_OBJECT, ".a": _INPUT_LIBRARY}


class LinkedCode(bytes):
    """The cubin a Linker made, with ``param_types`` from its PTX inputs and ``info_log``."""

    param_types = None
    info_log = ""


class Linker:
    """The driver's JIT linker: PTX, cubin, fatbin, object and library inputs into one cubin.

    For relocatable device code (a kernel calling a device function of another
    compilation unit): compile each unit with ``options=("-rdc=true",)``, add them, and
    load `complete`'s cubin with `Module`. Links in the current context.

    Parameters
    ----------
    max_registers : int, optional
        Registers per thread at most; 0 (default) for no limit.
    debug : bool, optional
        Keep debug information.
    lineinfo : bool, optional
        Keep line information.

    Examples
    --------
    >>> a = gpuhost.compile_ptx('extern "C" __device__ float twice(float x) '
    ...                         '{ return 2 * x; }', options=("-rdc=true",))
    >>> b = gpuhost.compile_ptx('extern "C" __device__ float twice(float); '
    ...                         'extern "C" __global__ void k(float *x) { x[0] = twice(x[0]); }',
    ...                         options=("-rdc=true",))
    >>> link = gpuhost.Linker()
    >>> link.add(a)
    >>> link.add(b)
    >>> module = gpuhost.Module(link.complete())        # doctest: +SKIP
    >>> kernel = module.get_function("k")               # doctest: +SKIP
    """

    def __init__(self, *, max_registers=0, debug=False, lineinfo=False):
        self.max_registers, self.debug, self.lineinfo = max_registers, debug, lineinfo
        self._inputs = []
        self._types = {}

    def _add(self, data, kind, name):
        if isinstance(data, str):
            data = data.encode()
        data = bytes(memoryview(data))
        if not data:
            raise ValueError("linker input %r is empty" % name)
        if kind == _INPUT_PTX:
            self._types.update(ptx_param_types(data.decode("utf-8", "replace")))
            data += b"\0"
        self._inputs.append((data, kind, name))

    def add_ptx(self, ptx, name="<ptx>"):
        """Add PTX, compiled with the other inputs when `complete` links.

        The parameter types of its kernels are kept for `Module` (see ``param_types``).

        Parameters
        ----------
        ptx : str or bytes or CompiledCode
            The PTX text.
        name : str, optional
            Its name in the linker's errors.

        Raises
        ------
        ValueError
            `ptx` is empty.

        Examples
        --------
        >>> ptx = gpuhost.compile_ptx('extern "C" __device__ float twice(float x) '
        ...                           '{ return 2 * x; }', options=("-rdc=true",))
        >>> link = gpuhost.Linker()
        >>> link.add_ptx(ptx, name="twice.ptx")
        >>> link.add_ptx("")
        Traceback (most recent call last):
            ...
        ValueError: linker input '<ptx>' is empty
        """
        self._add(ptx, _INPUT_PTX, name)

    def add_cubin(self, cubin, name="<cubin>"):
        """Add a cubin, relocatable device code for one architecture.

        Parameters
        ----------
        cubin : bytes or CompiledCode
            The cubin; from a CompiledCode the parameter types of its PTX are kept.
        name : str, optional
            Its name in the linker's errors.

        Raises
        ------
        ValueError
            `cubin` is empty.

        Examples
        --------
        >>> cubin = gpuhost.compile('extern "C" __device__ float twice(float x) '
        ...                         '{ return 2 * x; }', "cubin", options=("-rdc=true",))
        >>> link = gpuhost.Linker()
        >>> link.add_cubin(cubin, name="twice.cubin")
        """
        ptx = getattr(cubin, "ptx", None)
        if ptx:
            self._types.update(ptx_param_types(ptx))
        self._add(cubin, _INPUT_CUBIN, name)

    def add_fatbin(self, fatbin, name="<fatbin>"):
        """Add a fatbin: cubins and PTX for several architectures (``nvcc -fatbin``).

        Parameters
        ----------
        fatbin : bytes
            The fatbin file's contents.
        name : str, optional
            Its name in the linker's errors.

        Raises
        ------
        ValueError
            `fatbin` is empty.

        Examples
        --------
        >>> link = gpuhost.Linker()
        >>> with open("util.fatbin", "rb") as f:            # doctest: +SKIP
        ...     link.add_fatbin(f.read(), name="util.fatbin")
        >>> link.add_fatbin(b"")
        Traceback (most recent call last):
            ...
        ValueError: linker input '<fatbin>' is empty
        """
        self._add(fatbin, _INPUT_FATBIN, name)

    def add_object(self, data, name="<object>"):
        """Add a relocatable object file (``nvcc -dc``'s .o).

        Parameters
        ----------
        data : bytes
            The object file's contents.
        name : str, optional
            Its name in the linker's errors.

        Raises
        ------
        ValueError
            `data` is empty.

        Examples
        --------
        >>> link = gpuhost.Linker()
        >>> with open("util.o", "rb") as f:                 # doctest: +SKIP
        ...     link.add_object(f.read(), name="util.o")
        >>> link.add_object(b"")
        Traceback (most recent call last):
            ...
        ValueError: linker input '<object>' is empty
        """
        self._add(data, _INPUT_OBJECT, name)

    def add_library(self, data, name="<library>"):
        """Add a static library of relocatable objects (an .a archive, ``nvcc -lib``'s).

        Parameters
        ----------
        data : bytes
            The library file's contents.
        name : str, optional
            Its name in the linker's errors.

        Raises
        ------
        ValueError
            `data` is empty.

        Examples
        --------
        >>> link = gpuhost.Linker()
        >>> with open("libutil.a", "rb") as f:              # doctest: +SKIP
        ...     link.add_library(f.read(), name="libutil.a")
        >>> link.add_library(b"")
        Traceback (most recent call last):
            ...
        ValueError: linker input '<library>' is empty
        """
        self._add(data, _INPUT_LIBRARY, name)

    def add(self, code, name=None):
        """Add a CompiledCode from `compile`, PTX or cubin.

        Parameters
        ----------
        code : CompiledCode
            `compile`'s or `compile_ptx`'s output.
        name : str, optional
            Its name in the linker's errors; by default ``"<ptx>"`` or ``"<cubin>"``.

        Raises
        ------
        ValueError
            For another output (LTO IR).

        Examples
        --------
        >>> ptx = gpuhost.compile_ptx('extern "C" __device__ float twice(float x) '
        ...                           '{ return 2 * x; }', options=("-rdc=true",))
        >>> link = gpuhost.Linker()
        >>> link.add(ptx)
        >>> link.add(b"not compiled code")
        Traceback (most recent call last):
            ...
        ValueError: Linker.add() takes PTX or cubin CompiledCode, not None output
        """
        output = getattr(code, "output", None)
        if output == "ptx":
            self.add_ptx(code, name or "<ptx>")
        elif output == "cubin":
            self.add_cubin(code, name or "<cubin>")
        else:
            raise ValueError("Linker.add() takes PTX or cubin CompiledCode, not %r output"
                             % (output,))

    def add_file(self, path, kind=None):
        """Add a file of PTX, cubin, fatbin, object code or a library.

        Parameters
        ----------
        path : str or os.PathLike
            The file; its path is its name in the linker's errors.
        kind : {"ptx", "cubin", "fatbin", "object", "library"}, optional
            What it holds; by default told by the extension (.ptx, .cubin, .fatbin, .o,
            .a).

        Raises
        ------
        ValueError
            For an unknown `kind` or extension, or an empty file.
        OSError
            The file cannot be read.

        Examples
        --------
        >>> import os, tempfile
        >>> ptx = gpuhost.compile_ptx('extern "C" __device__ float twice(float x) '
        ...                           '{ return 2 * x; }', options=("-rdc=true",))
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = os.path.join(folder.name, "twice.ptx")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(ptx)
        >>> link = gpuhost.Linker()
        >>> link.add_file(path)
        >>> link.add_file(path, kind="cuda")
        Traceback (most recent call last):
            ...
        ValueError: kind must be one of ['cubin', 'fatbin', 'library', ...], not 'cuda'
        >>> folder.cleanup()
        """
        path = os.fspath(path)
        if kind is None:
            ext = os.path.splitext(path)[1]
            if ext not in _EXTENSIONS:
                raise ValueError("cannot tell the kind of %r from its extension; pass kind="
                                 % path)
            code = _EXTENSIONS[ext]
        else:
            names = {"ptx": _INPUT_PTX, "cubin": _INPUT_CUBIN, "fatbin": _INPUT_FATBIN,
                     "object": _INPUT_OBJECT, "library": _INPUT_LIBRARY}
            if kind not in names:
                raise ValueError("kind must be one of %s, not %r" % (sorted(names), kind))
            code = names[kind]
        with open(path, "rb") as f:
            self._add(f.read(), code, path)

    def complete(self):
        """Link the inputs into one cubin.

        Returns
        -------
        bytes
            The cubin, for `Module`; with ``info_log`` (the linker's log) and
            ``param_types`` (from the PTX inputs).

        Raises
        ------
        ValueError
            Nothing was added.
        CudaAPIError
            Linking failed; the message holds the linker's log.

        Examples
        --------
        >>> a = gpuhost.compile_ptx('extern "C" __device__ float twice(float x) '
        ...                         '{ return 2 * x; }', options=("-rdc=true",))
        >>> b = gpuhost.compile_ptx('extern "C" __device__ float twice(float); '
        ...                         'extern "C" __global__ void k(float *x) '
        ...                         '{ x[0] = twice(x[0]); }', options=("-rdc=true",))
        >>> link = gpuhost.Linker()
        >>> link.add(a)
        >>> link.add(b)
        >>> cubin = link.complete()                         # doctest: +SKIP
        >>> gpuhost.Module(cubin).get_function("k").name    # doctest: +SKIP
        'k'
        >>> gpuhost.Linker().complete()
        Traceback (most recent call last):
            ...
        ValueError: nothing to link: add inputs first
        """
        if not self._inputs:
            raise ValueError("nothing to link: add inputs first")
        cubin, log = _core.link(self._inputs, self.max_registers, self.debug, self.lineinfo)
        out = LinkedCode(cubin)
        out.param_types = dict(self._types)
        out.info_log = log
        return out
