"""Kernel arguments that are foreign arrays (csrc/kernel_args.c calls in here): the device
pointer of an object exporting the CUDA array interface or DLPack, with the launch's stream
ordered after the stream its exporter names; also what gpuhost.nccl uses of it.
"""
from . import _core


def stream_handle(stream):
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


def order_after(producer, stream):
    """Make work queued next on `stream` wait for what is queued on `producer` now."""
    if producer in (1, 2) and stream_handle(stream) in (0, 1):
        return  # the legacy default stream, and the launch is on it too
    if producer == stream_handle(stream):
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
            order_after(producer, stream)
        return ptr or 0, -1
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        from ._arrays import from_dlpack
        arr = from_dlpack(obj)
        return arr.ptr, arr.device.id
    return None


# A launch with a foreign device array calls this (csrc/kernel_args.c): registered once.
_core._set_helpers(foreign_pointer=foreign_pointer)
