"""The default device and its context, and the caches kept per context: what gpuhost's
pytest plugin and pycuda's tools (gpuhost.compat.pycuda) both use.

The default device is the one CUDA_DEVICE names, else ``~/.cuda-device`` (or
``~/.cuda_device``), else the first device whose primary context answers;
``make_default_context()`` pushes its primary context.  ``clear_context_caches()`` empties
every cache registered in ``memo_caches`` (pycuda's ``context_dependent_memoize`` registers
its own), as a context reset needs.
"""
import os
import re

from .devices import gpus
from .errors import CudaDriverError, CudaSupportError, InvalidDeviceError

# The files that name the default device, in the order they are read: pycuda documents
# ~/.cuda-device but its code reads ~/.cuda_device.
DEVICE_FILES = (".cuda-device", ".cuda_device")

_INTEGER = re.compile(r"[+-]?[0-9]+")


# ---- the default device and context ----

def _devices_phrase(count):
    """'the devices are 0 (name), 1 (name)', for error messages."""
    names = []
    for i in range(count):
        try:
            names.append("%d (%s)" % (i, gpus[i].name))
        except CudaDriverError:
            names.append("%d" % i)
    if count == 1:
        return "the only device is %s" % names[0]
    return "the devices are %s" % ", ".join(names)


def _parse_device(text, source, count):
    """The device number `text` read from `source` (a variable or a file) names."""
    value = text.strip()
    if not _INTEGER.fullmatch(value):
        raise ValueError("%s is not a device number: %r; %s"
                         % (source, value, _devices_phrase(count)))
    number = int(value)
    if not 0 <= number < count:
        raise InvalidDeviceError("%s names device %d, which does not exist; %s"
                                 % (source, number, _devices_phrase(count)))
    return number


def _configured_device(count):
    """The device number set by CUDA_DEVICE, else by ~/.cuda-device or ~/.cuda_device
    (the first that exists), or None when neither is set.  A value that is not an
    integer raises ValueError, one out of range InvalidDeviceError; both name where the
    value came from and the devices that exist."""
    value = os.environ.get("CUDA_DEVICE")
    if value is not None:
        return _parse_device(value, "CUDA_DEVICE", count)
    home = os.path.expanduser("~")
    for name in DEVICE_FILES:
        path = os.path.join(home, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        return _parse_device(text, path, count)
    return None


def _push_primary_context(dev):
    """Push `dev`'s primary context and check that it answers; return it."""
    ctx = dev.get_primary_context()
    ctx.push()
    try:
        ctx.get_memory_info()  # a context that cannot answer this cannot run anything
    except BaseException:
        ctx.pop()
        raise
    return ctx


def make_default_context(ctx_maker=None):
    """Make the default device's primary context current and return it (pycuda's).

    The context is pushed on this thread's context stack; ``ctx.pop()`` undoes it. The
    device is the one the CUDA_DEVICE environment variable names, else the one
    ``~/.cuda-device`` (or ``~/.cuda_device``) names, else the first device, in order,
    whose context can be made and used.

    Parameters
    ----------
    ctx_maker : callable, optional
        ``ctx_maker(device)`` makes the context current and returns it, instead of
        pushing the device's primary context.

    Returns
    -------
    Context

    Raises
    ------
    CudaSupportError
        CUDA is not usable, or no device gives a usable context.
    ValueError
        CUDA_DEVICE or the file holds something that is not a device number.
    InvalidDeviceError
        CUDA_DEVICE or the file names a device that does not exist.
    CudaDriverError
        The chosen device fails.

    Examples
    --------
    >>> from gpuhost import tools
    >>> ctx = tools.make_default_context()
    >>> ctx.device.id
    0
    >>> ctx.pop()
    """
    if ctx_maker is None:
        ctx_maker = _push_primary_context
    count = len(gpus)  # raises CudaSupportError without a usable driver
    chosen = _configured_device(count)
    if chosen is not None:
        return ctx_maker(gpus[chosen])
    failures = []
    for i in range(count):
        try:
            return ctx_maker(gpus[i])
        except CudaDriverError as e:
            failures.append("device %d: %s" % (i, e))
    raise CudaSupportError("make_default_context(): none of the %d devices gave a usable "
                           "context (%s)" % (count, "; ".join(failures)))


# ---- caches kept per context ----

memo_caches = []  # the {Context: {key: value}} dict of every memoized function


def clear_context_caches():
    """Empty the cache of every function decorated with `context_dependent_memoize`
    (pycuda's).

    Examples
    --------
    >>> from gpuhost import tools
    >>> tools.clear_context_caches()
    """
    for cache in memo_caches:
        cache.clear()
