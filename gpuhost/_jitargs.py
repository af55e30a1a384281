"""The arguments of gpuhost.jit's launches that the Python side prepares: the context and
stream a launch goes to, and the device arrays of host arrays, records, In/Out/InOut hints and
other libraries' arrays (copied in and back as numba copies them, or read with the launch's
stream ordered after their exporter's).  Shared by the dispatcher's launches through numba's
rules and from its disk records, and by the hints' to_device.
"""
import functools

import numpy as np

from . import _core, _numba


def stream_arg(stream):
    """A launch's stream as gpuhost's calls take it: None for numba's 0 (the default)."""
    return None if (isinstance(stream, int) and stream == 0) else stream


_PACKED_AS_THEY_ARE = (_core.DeviceArray, int, float, complex, tuple)


def needs_view(value):
    """Whether device_view makes what a launch packs of an argument: a host array or
    record (copied), a hint, another library's array (read, the launch's stream ordered
    after its exporter's); not a DeviceArray or a scalar."""
    if isinstance(value, (np.ndarray, np.void)):
        return True
    return not isinstance(value, _PACKED_AS_THEY_ARE) and not isinstance(value, np.generic)


def hinted_device_array(hint, value, retr, stream=0):
    """The device array an In/Out/InOut hint of class `hint` gives a kernel for `value`
    (their to_device)."""
    ctx = _core._jit_context(stream)  # where a launch on `stream` goes: the C launcher says
    return device_view(ctx, retr, hint(value), None, stream)


def device_view(ctx, retr, value, ty, stream):
    """A DeviceArray for an array (or record) argument of numba type `ty`: device arrays as
    they are; host arrays copied in and, after the launch, back (numba's default, and its
    In / Out / InOut hints, gpuhost's or numba's)."""
    from ._arghints import hint_of
    from ._arrays import to_device

    copy_in, copy_out = True, True
    hint = hint_of(value)
    if hint is not None:
        copy_in, copy_out, value = hint
    if isinstance(value, np.ndarray) and hasattr(value, "__cuda_array_interface__"):
        from ._arrays import as_cuda_array

        return as_cuda_array(value)  # mapped or managed memory: the device reaches it
    if not isinstance(value, (np.ndarray, np.void)):
        # a device array: gpuhost's, or another library's read in C (the launch's stream
        # ordered after its exporter's); a dtype NumPy lacks (bfloat16) travels as bytes
        dev = _core._foreign_array(value, stream_arg(stream), void_ok=True, host_ok=True)
        if dev is None and hasattr(value, "__dlpack__"):
            raise TypeError("%s is in host memory, not device memory; move it to the GPU "
                            "first" % type(value).__name__)
        if dev is not None:
            if dev.context is not ctx:
                raise ValueError("a device array of device %d was passed to a kernel launched "
                                 "on device %d" % (dev.context.device.id, ctx.device.id))
            return dev
    host = value
    if isinstance(value, np.void):
        host = np.array(value, dtype=value.dtype)  # a record: copied in as an array of one
    host = np.asanyarray(host)
    if copy_in and copy_out and isinstance(value, np.ndarray):
        _numba.performance_warning("Host array used in CUDA kernel will incur copy overhead "
                                   "to/from device.")
    stream = stream_arg(stream) or 0
    dev = to_device(host, stream=stream) if copy_in else _empty_like(host, stream)
    if copy_out:
        retr.append(functools.partial(_copy_back, dev, value, host, stream))
    return dev


def _empty_like(host, stream):
    from ._arrays import device_array

    return device_array(host.shape, host.dtype, stream=stream)


def _copy_back(dev, value, host, stream):
    if isinstance(value, np.void):
        got = dev.copy_to_host(stream=stream)[()]
        for name in value.dtype.names or ():  # a record scalar is a view: field by field
            value[name] = got[name]
    elif isinstance(value, np.ndarray) and value.flags.writeable:
        dev.copy_to_host(value, stream=stream)
