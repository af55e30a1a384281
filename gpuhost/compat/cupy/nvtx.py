"""cupy.cuda.nvtx's names over gpuhost's NVTX support: markers and nested ranges.

``Mark`` / ``RangePush`` take a color index (CuPy's palette of ten, -1: no color);
``MarkC`` / ``RangePushC`` an ARGB color (0xAARRGGBB, used as given).
"""
from ... import _core

__all__ = ["Mark", "MarkC", "RangePop", "RangePush", "RangePushC", "available"]

#: True: NVTX v3 is built in, and its calls cost nothing without a profiler (CuPy's name).
available = True

# CuPy's palette for the id_color arguments (the same ARGB values, so a timeline looks
# the same under either).
_COLORS = (0xFF00FF00, 0xFF007FFF, 0xFF7F00FF, 0xFFFF0000, 0xFF7FFF00,
           0xFF00FF7F, 0xFF0000FF, 0xFFFF007F, 0xFFFF7F00, 0xFF7F7F7F)


def _message(message):
    if not isinstance(message, str):
        raise TypeError("message must be a str, not %s" % type(message).__name__)
    return message


def _indexed(id_color):
    if isinstance(id_color, bool) or not isinstance(id_color, int):
        raise TypeError("id_color must be an int, not %s" % type(id_color).__name__)
    return None if id_color < 0 else _COLORS[id_color % len(_COLORS)]


def _argb(color):
    if isinstance(color, bool) or not isinstance(color, int):
        raise TypeError("color must be an int (0xAARRGGBB), not %s" % type(color).__name__)
    if not 0 <= color <= 0xFFFFFFFF:
        raise OverflowError("color must be in 0 .. 0xFFFFFFFF, not %d" % color)
    return color


def Mark(message, id_color=-1):
    """An instant NVTX marker, colored by index into CuPy's palette.

    Shown on a profiler's timeline (Nsight Systems); costs nothing without one.

    Parameters
    ----------
    message : str
        The marker's text.
    id_color : int, optional
        An index into the palette of ten colors (taken modulo ten); -1: no color.

    Raises
    ------
    TypeError
        `message` is not a str, or `id_color` not an int.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nvtx
    >>> nvtx.Mark("checkpoint", 2)
    """
    _core.nvtx_mark(_message(message), _indexed(id_color))


def MarkC(message, color=0):
    """An instant NVTX marker of an ARGB color.

    Parameters
    ----------
    message : str
        The marker's text.
    color : int, optional
        0xAARRGGBB, used as given.

    Raises
    ------
    TypeError
        `message` is not a str, or `color` not an int.
    OverflowError
        `color` is outside 0 .. 0xFFFFFFFF.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nvtx
    >>> nvtx.MarkC("checkpoint", 0xFF00FF00)
    """
    _core.nvtx_mark(_message(message), _argb(color))


def RangePush(message, id_color=-1):
    """Open a nested NVTX range, colored by index into CuPy's palette.

    `RangePop` closes it; ranges nest, per thread.

    Parameters
    ----------
    message : str
        The range's text.
    id_color : int, optional
        An index into the palette of ten colors (taken modulo ten); -1: no color.

    Raises
    ------
    TypeError
        `message` is not a str, or `id_color` not an int.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nvtx
    >>> nvtx.RangePush("copy", 1)
    >>> d = gpuhost.to_device(np.arange(4))
    >>> nvtx.RangePop()
    """
    _core.nvtx_range_push(_message(message), _indexed(id_color))


def RangePushC(message, color=0):
    """Open a nested NVTX range of an ARGB color; `RangePop` closes it.

    Parameters
    ----------
    message : str
        The range's text.
    color : int, optional
        0xAARRGGBB, used as given.

    Raises
    ------
    TypeError
        `message` is not a str, or `color` not an int.
    OverflowError
        `color` is outside 0 .. 0xFFFFFFFF.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nvtx
    >>> nvtx.RangePushC("copy", 0xFF0000FF)
    >>> nvtx.RangePop()
    """
    _core.nvtx_range_push(_message(message), _argb(color))


def RangePop():
    """Close this thread's innermost NVTX range, opened by `RangePush` or `RangePushC`.

    Examples
    --------
    >>> from gpuhost.compat.cupy import nvtx
    >>> nvtx.RangePush("outer")
    >>> nvtx.RangePush("inner")
    >>> nvtx.RangePop()
    >>> nvtx.RangePop()
    """
    _core.nvtx_range_pop()
