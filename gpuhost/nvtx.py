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

#: The color names `mark`, `range` and `range_push` take, with their ARGB values
#: (``nvtx.COLORS["red"] == 0xFFFF0000``); a name is matched case-insensitively.
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
    """An instant marker on the profiler's timeline.

    Parameters
    ----------
    message : str
        The marker's text (any object, made a str).
    color : int or str, optional
        ARGB (``0xAARRGGBB``; under ``0x01000000`` taken as opaque RGB) or a name in
        `COLORS`.

    Raises
    ------
    ValueError
        An unknown color name.
    TypeError
        A color neither an int nor a str.

    Examples
    --------
    >>> from gpuhost import nvtx
    >>> nvtx.mark("checkpoint", color="red")
    """
    _core.nvtx_mark(str(message), _argb(color))


def range_push(message, color=None):
    """Open a nested range, closed by `range_pop`; prefer `range` as a context manager.

    Parameters
    ----------
    message : str
        The range's text.
    color : int or str, optional
        As for `mark`.

    Returns
    -------
    int
        The range's depth, from 0; negative when no profiler is attached.

    Examples
    --------
    >>> from gpuhost import nvtx
    >>> depth = nvtx.range_push("load")
    >>> depth = nvtx.range_pop()
    """
    return _core.nvtx_range_push(str(message), _argb(color))


def range_pop():
    """Close this thread's innermost range opened by `range_push`.

    Returns
    -------
    int
        The depth the range had, the number its `range_push` returned; negative when no
        profiler is attached.

    Examples
    --------
    >>> from gpuhost import nvtx
    >>> depth = nvtx.range_push("load")
    >>> d = gpuhost.to_device(np.ones(8))  # the work the range covers
    >>> nvtx.range_pop() == depth
    True
    """
    return _core.nvtx_range_pop()


class range:  # noqa: A001 - NVTX's own name, as in the nvtx package
    """A range on the profiler's timeline around a block or each call of a function.

    Parameters
    ----------
    message : str
        The range's text.
    color : int or str, optional
        As for `mark`.

    Examples
    --------
    >>> from gpuhost import nvtx
    >>> with nvtx.range("step", color=0xFF00FF00):
    ...     d = gpuhost.to_device(np.ones(8))
    >>> @nvtx.range("load", color="blue")
    ... def load():
    ...     return gpuhost.to_device(np.ones(8))
    >>> load().shape
    (8,)
    """

    __slots__ = {
        "message": """The range's message, a str.

        The text the profiler shows, ``str(message)`` of what was given.

        Examples
        --------
        >>> from gpuhost import nvtx
        >>> nvtx.range("step").message, nvtx.range(42).message
        ('step', '42')
        """,
        "color": """The range's ARGB color as an int, or None for none.

        A color name is looked up in `COLORS`; an int under ``0x01000000`` (RGB) is made
        opaque.

        Examples
        --------
        >>> from gpuhost import nvtx
        >>> hex(nvtx.range("step", color="red").color)
        '0xffff0000'
        >>> hex(nvtx.range("step", color=0x00FF00).color)
        '0xff00ff00'
        >>> print(nvtx.range("step").color)
        None
        """,
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
