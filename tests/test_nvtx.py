"""gpuhost.nvtx: markers and ranges (no profiler attached in the tests: calls are no-ops
that must still accept and check their arguments)."""
import pytest

from gpuhost import nvtx


def test_mark_and_ranges_accept_messages_and_colors():
    nvtx.mark("point")
    nvtx.mark("point", color="red")
    nvtx.mark(42, color=0x00FF00)
    assert isinstance(nvtx.range_push("outer", color=0xFF112233), int)
    assert isinstance(nvtx.range_pop(), int)


def test_range_as_context_manager_and_decorator():
    with nvtx.range("block", color="blue") as r:
        assert repr(r) == "nvtx.range('block')"

    @nvtx.range("fn")
    def add(a, b):
        """adds"""
        return a + b

    assert add(2, 3) == 5 and add.__name__ == "add" and add.__doc__ == "adds"
    with pytest.raises(ZeroDivisionError):
        with nvtx.range("raises"):
            1 / 0


def test_bad_colors_are_refused():
    with pytest.raises(ValueError, match="unknown color 'mauve'"):
        nvtx.mark("x", color="mauve")
    with pytest.raises(TypeError, match="color must be an int .0xAARRGGBB., a color name or None"):
        nvtx.range("x", color=1.5)
    with pytest.raises(TypeError):
        nvtx.mark("x", color=True)
    with pytest.raises(ValueError, match="color must be in 0 .. 0xFFFFFFFF"):
        nvtx.mark("x", color=0x1FFFFFFFF)


def test_rgb_ints_are_made_opaque():
    assert nvtx._argb(0x123456) == 0xFF123456
    assert nvtx._argb(0x80123456) == 0x80123456
    assert nvtx._argb("RED") == 0xFFFF0000
