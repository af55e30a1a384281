"""numba.cuda's In, Out and InOut: how a host array passed to a kernel travels.

A host array argument is copied to the device before the launch and back after it (InOut,
numba's default); In copies it there only, Out only back.  These are gpuhost's classes, so
that a launch with them needs no numba-cuda (a kernel launched from gpuhost.jit's disk
records); numba types them as it types its own (``_numba_type_``), and gpuhost.jit takes
numba-cuda's own In/Out/InOut alike.
"""

import sys

__all__ = ["ArgHint", "In", "InOut", "Out"]


class ArgHint:
    """A kernel argument with how it travels between host and device.

    Parameters
    ----------
    value : numpy.ndarray or device array
        The argument.  A device array is passed as it is, whatever the hint.

    Examples
    --------
    >>> hint = gpuhost.In(np.arange(3.0))
    >>> hint.value
    array([0., 1., 2.])
    """

    copy_input = True
    copy_output = True

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.value)

    @property
    def _numba_type_(self):
        """numba's type of the value (numba's typeof asks for it): imports numba-cuda."""
        from numba.cuda.typing.typeof import Purpose, typeof

        return typeof(self.value, Purpose.argument)

    def to_device(self, retr, stream=0):
        """The device array a kernel gets for the value, as numba's ArgHint.to_device: a
        host array copied in if the hint says so, and a callable appended to `retr` that
        copies it back after the launch if the hint says so.

        Examples
        --------
        >>> retr = []
        >>> host = np.zeros(4)
        >>> dev = gpuhost.Out(host).to_device(retr)
        >>> dev.copy_to_device(np.arange(4.0))
        >>> for writeback in retr:
        ...     writeback()
        >>> host
        array([0., 1., 2., 3.])
        """
        from ._jitargs import hinted_device_array

        return hinted_device_array(type(self), self.value, retr, stream)


class In(ArgHint):
    """Copied to the device before the launch, not back after it.

    Examples
    --------
    >>> gpuhost.In(np.arange(3.0)).copy_output
    False
    """

    copy_output = False


class Out(ArgHint):
    """Copied back to the host after the launch, not to the device before it.

    Examples
    --------
    >>> gpuhost.Out(np.zeros(3)).copy_input
    False
    """

    copy_input = False


class InOut(Out):
    """Copied to the device before the launch and back after it (numba's default).

    Examples
    --------
    >>> gpuhost.InOut(np.zeros(3)).copy_input
    True
    """

    copy_input = True


def hint_of(value):
    """(copy in, copy out, the wrapped value) for a hinted argument, gpuhost's or numba's;
    None for any other value."""
    if isinstance(value, ArgHint):
        return type(value).copy_input, type(value).copy_output, value.value
    args = sys.modules.get("numba.cuda.args")
    if args is not None and isinstance(value, args.ArgHint):
        return not isinstance(value, args.Out) or isinstance(value, args.InOut), \
            not isinstance(value, args.In), value.value
    return None
