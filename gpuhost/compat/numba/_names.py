"""numba.cuda's names that gpuhost answers for kernels (``cuda.grid``, ``cuda.shared``,
``cuda.float32`` ...) and gpuhost's type in numba's typing: what gpuhost/__init__.py's
``__getattr__`` resolves from numba-cuda on first use (numba-cuda, checked, is imported
then by gpuhost/_numba.py's ``load()``).
"""
from ... import _numba

# What kernels use through the module (`cuda.grid`, `cuda.shared.array`, ...), and the
# names numba.cuda exports for kernels and their compilation that gpuhost has none of its
# own for: gpuhost's __getattr__ resolves them from numba.cuda on first use.
KERNEL_NAMES = frozenset("""
    Archive CUSource Cubin Dim3 Fatbin GridGroup KernelRuntimeError LTOIR
    LinkableCode Object PTXSource Reduce activemask all_sync any_sync atomic
    ballot_sync bfloat16 blockDim blockIdx brev cbrt clz compile_all
    compile_for_current_device const declare_device dim3 eq_sync ffs fma grid gridDim
    grid_group gridsize guvectorize laneid lanemask_lt ldca ldcg ldcs ldcv ldlu
    literal_unroll local match_all_sync match_any_sync nanosleep popc reduce selp shared
    shfl_down_sync shfl_sync shfl_up_sync shfl_xor_sync stcg stcs stwb stwt syncthreads
    syncthreads_and syncthreads_count syncthreads_or syncwarp threadIdx threadfence
    threadfence_block threadfence_system vectorize warpsize
    b1 bool_ boolean byte c16 c8 char complex128 complex64 double f4 f8 float32 float64
    i1 i2 i4 i8 int16 int32 int64 int8 int_ intc intp long_ longlong none optional short
    size_t ssize_t u1 u2 u4 u8 uchar uint uint16 uint32 uint64 uint8 uintc uintp ulong
    ulonglong ushort void
""".split())
# Vector types: float32x4, int16x2, ... and the CUDA C names (float4, uchar2, ...).
VECTOR_PREFIXES = ("float", "double", "int", "uint", "char", "uchar", "short", "ushort",
                   "long", "ulong", "longlong", "ulonglong")
KERNEL_MODULES = frozenset(("cg", "libdevice", "fp16", "bf16", "fp8", "random", "types",
                            "cache_hints"))


def is_kernel_name(name):
    if name in KERNEL_NAMES or name in KERNEL_MODULES:
        return True
    stem = name.rstrip("1234")
    if stem != name and stem.rstrip("x") in VECTOR_PREFIXES + ("float32", "float64", "int8",
                                                              "int16", "int32", "int64",
                                                              "uint8", "uint16", "uint32",
                                                              "uint64"):
        return True
    return False


def kernel_name(name):
    """numba.cuda's `name` (a submodule imported if need be)."""
    cuda = _numba.load()
    if name in KERNEL_MODULES and not hasattr(cuda, name):
        from importlib import import_module

        return import_module("numba.cuda." + name)
    return getattr(cuda, name)


def module_type():
    """numba's type for numba.cuda's module: gpuhost answers to typeof as numba.cuda does,
    so a kernel that calls its module `cuda` compiles the same either way."""
    cuda = _numba.load()
    from numba.cuda import types

    return types.Module(cuda)
