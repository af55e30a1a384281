"""NVTX annotations for Nsight Systems and other profilers: markers and nested ranges.

    from gpuhost import nvtx
    nvtx.mark("checkpoint", color="red")
    with nvtx.range("step", color=0xFF00FF00):
        ...
    @nvtx.range("load")
    def load(): ...

Cheap when no profiler is attached. Colors: an ARGB int (0xAARRGGBB; an int under
0x01000000 is taken as RGB, fully opaque) or one of the names in COLORS.
"""
import functools

from . import _core

__all__ = ["COLORS", "mark", "range", "range_pop", "range_push"]

COLORS = {
    "red": 0xFFFF0000, "green": 0xFF00FF00, "blue": 0xFF0000FF, "yellow": 0xFFFFFF00,
    "cyan": 0xFF00FFFF, "magenta": 0xFFFF00FF, "orange": 0xFFFFA500, "purple": 0xFF800080,
    "white": 0xFFFFFFFF, "black": 0xFF000000, "gray": 0xFF808080, "grey": 0xFF808080,
}


def _argb(color):
    if color is None:
        return None
    if isinstance(color, str):
        try:
            return COLORS[color.lower()]
        except KeyError:
            raise ValueError("unknown color %r: use an ARGB int or one of %s"
                             % (color, ", ".join(sorted(COLORS)))) from None
    if isinstance(color, bool) or not isinstance(color, int):
        raise TypeError("color must be an int (0xAARRGGBB), a color name or None, not %s"
                        % type(color).__name__)
    if 0 <= color < 0x01000000:
        color |= 0xFF000000
    return color


def mark(message, color=None):
    """An instant marker on the profiler's timeline."""
    _core.nvtx_mark(str(message), _argb(color))


def range_push(message, color=None):
    """Open a nested range; returns its depth (negative when no profiler is attached)."""
    return _core.nvtx_range_push(str(message), _argb(color))


def range_pop():
    """Close the innermost range opened by range_push()."""
    return _core.nvtx_range_pop()


class range:  # noqa: A001 - NVTX's own name, as in the nvtx package
    """A range around a block (``with nvtx.range("x"):``) or a function (``@nvtx.range("x")``)."""

    __slots__ = {
        "message": "The range's message, a str.",
        "color": "The range's ARGB color as an int, or None for none.",
    }

    def __init__(self, message, color=None):
        self.message = str(message)
        self.color = _argb(color)

    def __enter__(self):
        _core.nvtx_range_push(self.message, self.color)
        return self

    def __exit__(self, *exc_info):
        _core.nvtx_range_pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            _core.nvtx_range_push(self.message, self.color)
            try:
                return fn(*args, **kwargs)
            finally:
                _core.nvtx_range_pop()

        return wrapper

    def __repr__(self):
        return "nvtx.range(%r)" % self.message
