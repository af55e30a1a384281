"""gpuhost's one built-in kernel source: element-wise strided copies and fills between
device arrays of any layout, with broadcasting (a stride of 0), for the copies and
assignments the driver's memcpy and memset cannot do in one call.

Compiled once with NVRTC (the compile cache keeps it), loaded once per context; without
NVRTC, or on a driver that cannot load modules, the callers go through the host.
"""
import threading

import numpy as np

from . import _core

MAXDIMS = 64
SOURCE = r"""
#define GH_MAXDIMS 64
struct gh_layout {
    long long shape[GH_MAXDIMS];
    long long src[GH_MAXDIMS];
    long long dst[GH_MAXDIMS];
};

/* The byte offsets in src and dst of element i (C order over `shape`). */
__device__ __forceinline__ void
gh_offsets(const gh_layout &L, int ndim, long long i, long long *s, long long *d)
{
    long long so = 0, dof = 0;
    for (int k = ndim - 1; k >= 0; k--) {
        long long n = L.shape[k], idx = i % n;
        i /= n;
        so += idx * L.src[k];
        dof += idx * L.dst[k];
    }
    *s = so;
    *d = dof;
}

#define GH_LOOP(n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

#define GH_COPY(name, T)                                                              \
    extern "C" __global__ void name(char *dst, const char *src, gh_layout L, int ndim, \
                                    long long n)                                      \
    {                                                                                 \
        GH_LOOP(n) {                                                                  \
            long long s, d;                                                           \
            gh_offsets(L, ndim, i, &s, &d);                                           \
            *(T *)(dst + d) = *(const T *)(src + s);                                  \
        }                                                                             \
    }
GH_COPY(gh_copy1, unsigned char)
GH_COPY(gh_copy2, unsigned short)
GH_COPY(gh_copy4, unsigned int)
GH_COPY(gh_copy8, unsigned long long)
GH_COPY(gh_copy16, uint4)

extern "C" __global__ void gh_copy_bytes(char *dst, const char *src, gh_layout L, int ndim,
                                         long long n, int itemsize)
{
    GH_LOOP(n) {
        long long s, d;
        gh_offsets(L, ndim, i, &s, &d);
        for (int b = 0; b < itemsize; b++) dst[d + b] = src[s + b];
    }
}

#define GH_FILL(name, T)                                                                  \
    extern "C" __global__ void name(char *dst, gh_layout L, int ndim, long long n, T value) \
    {                                                                                     \
        GH_LOOP(n) {                                                                      \
            long long s, d;                                                               \
            gh_offsets(L, ndim, i, &s, &d);                                               \
            *(T *)(dst + d) = value;                                                      \
        }                                                                                 \
    }
GH_FILL(gh_fill1, unsigned char)
GH_FILL(gh_fill2, unsigned short)
GH_FILL(gh_fill4, unsigned int)
GH_FILL(gh_fill8, unsigned long long)
GH_FILL(gh_fill16, uint4)
"""

_LAYOUT = np.dtype([("shape", "<i8", MAXDIMS), ("src", "<i8", MAXDIMS), ("dst", "<i8", MAXDIMS)])
_loaded = {}  # Context -> (Module, {name: Kernel})
_lock = threading.Lock()
_unavailable = []  # why kernels cannot be had in this process, once known


def _kernel(dev, name):
    """Kernel `name` of the module loaded in dev's context; None (remembered) where kernels
    cannot be compiled or loaded: no NVRTC, or a driver that loads no modules."""
    if _unavailable:
        return None
    entry = _loaded.get(dev.context)
    if entry is None or entry[0].unloaded:
        from .compiler import compile as nvrtc_compile
        from .errors import CudaAPIError, NvrtcSupportError

        with _lock, dev.device:
            try:
                entry = (_core.Module(nvrtc_compile(SOURCE)), {})
            except NvrtcSupportError as e:
                _unavailable.append(e)
                return None
            except CudaAPIError as e:
                if e.name != "CUDA_ERROR_NOT_SUPPORTED":
                    raise
                _unavailable.append(e)
                return None
            _core._live_kept(entry[0])  # cached by design: no leak for the leak check
            _loaded[dev.context] = entry
    kernels = entry[1]
    k = kernels.get(name)
    if k is None:
        k = kernels[name] = entry[0].get_function(name)
    return k


def _layout(shape, src_strides, dst_strides):
    layout = np.zeros((), _LAYOUT)
    ndim = len(shape)
    layout["shape"][:ndim] = shape
    layout["src"][:ndim] = src_strides
    layout["dst"][:ndim] = dst_strides
    return layout[()]


def _grid(n):
    return max(1, min((n + 255) // 256, 65535)), 256


def _unit(item, addresses):
    """The widest element type usable for `item`-byte elements at these byte addresses
    and strides, or None (bytes one by one)."""
    if item in (1, 2, 4, 8, 16) and all(a % item == 0 for a in addresses):
        return item
    return None


def broadcast_error(src_shape, shape):
    """numpy's own words for assigning an array of `src_shape` into one of `shape`."""
    as_strided = np.lib.stride_tricks.as_strided
    dst = as_strided(np.zeros(1, np.uint8), tuple(shape), (0,) * len(shape))
    src = as_strided(np.zeros(1, np.uint8), tuple(src_shape), (0,) * len(src_shape))
    try:
        dst[...] = src
    except ValueError as e:
        return str(e)
    return "could not broadcast input array from shape %s into shape %s" % (tuple(src_shape),
                                                                          tuple(shape))


def broadcast_strides(src_shape, src_strides, shape):
    """src's strides aligned to `shape` by numpy's broadcasting rules (0 where it repeats);
    ValueError if it does not broadcast."""
    pad = len(shape) - len(src_shape)
    if pad < 0:
        raise ValueError(broadcast_error(src_shape, shape))
    out = []
    for n, (sn, ss) in zip(shape, zip((1,) * pad + tuple(src_shape), (0,) * pad + tuple(src_strides))):
        if sn == n:
            out.append(ss if n != 1 else 0)
        elif sn == 1:
            out.append(0)
        else:
            raise ValueError(broadcast_error(src_shape, shape))
    return out


def copy(dst, src, stream):
    """dst[...] = src on the device (same dtype, same context, src broadcastable to dst).
    True if done, False if kernels cannot be had here (the caller goes through the host)."""
    if dst.size == 0:
        return True
    if dst.ndim > MAXDIMS:
        return False
    strides = broadcast_strides(src.shape, src.strides, dst.shape)
    unit = _unit(dst.itemsize, [dst.ptr, src.ptr] + list(dst.strides) + strides)
    k = _kernel(dst, "gh_copy_bytes" if unit is None else "gh_copy%d" % unit)
    if k is None:
        return False
    layout = _layout(dst.shape, strides, dst.strides)
    grid, block = _grid(dst.size)
    if unit is None:
        k[grid, block, stream](dst, src, layout, dst.ndim, dst.size, dst.itemsize)
    else:
        k[grid, block, stream](dst, src, layout, dst.ndim, dst.size)
    return True


def fill(dst, value, stream):
    """Every element of dst set to the numpy scalar `value` (dst's dtype). True if done."""
    if dst.size == 0:
        return True
    if dst.ndim > MAXDIMS:
        return False
    unit = _unit(dst.itemsize, [dst.ptr] + list(dst.strides))
    k = _kernel(dst, "gh_fill%d" % unit) if unit is not None else None
    if k is None:
        return False
    layout = _layout(dst.shape, (0,) * dst.ndim, dst.strides)
    grid, block = _grid(dst.size)
    k[grid, block, stream](dst, layout, dst.ndim, dst.size,
                           np.asarray(value, dst.dtype).tobytes())
    return True
