"""cupy.cuda.nvtx's names over gpuhost's NVTX support: markers and nested ranges.

``Mark`` / ``RangePush`` take a color index (CuPy's palette of ten, -1: no color);
``MarkC`` / ``RangePushC`` an ARGB color (0xAARRGGBB, used as given).
"""
from ... import _core

__all__ = ["Mark", "MarkC", "RangePop", "RangePush", "RangePushC", "available"]

available = True  # NVTX v3 is built in; calls cost nothing without a profiler

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
    """An instant marker, colored by index into the palette (-1: no color)."""
    _core.nvtx_mark(_message(message), _indexed(id_color))


def MarkC(message, color=0):
    """An instant marker of ARGB `color`."""
    _core.nvtx_mark(_message(message), _argb(color))


def RangePush(message, id_color=-1):
    """Open a nested range, colored by index into the palette (-1: no color)."""
    _core.nvtx_range_push(_message(message), _indexed(id_color))


def RangePushC(message, color=0):
    """Open a nested range of ARGB `color`."""
    _core.nvtx_range_push(_message(message), _argb(color))


def RangePop():
    """Close the innermost range."""
    _core.nvtx_range_pop()
