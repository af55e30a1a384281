"""Rich displays for Jupyter and IPython: _repr_html_ and _repr_pretty_ of devices, the
device list and detect()'s summary, device arrays, events and memory pools."""
import html
import re

import numpy as np
import pytest

import gpuhost
import gpuhost.memory
import gpuhost.tools
from conftest import run_python

COPIES = ("cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpyHtoDAsync",
          "cuMemcpyDtoHAsync", "cuMemcpyDtoDAsync", "cuMemcpy2D", "cuMemcpy2DAsync",
          "cuMemcpy3D", "cuMemcpy3DAsync", "cuMemcpyPeer", "cuMemcpyPeerAsync")


class Printer:
    """Stands in for IPython's pretty printer: collects what text() is given."""

    def __init__(self):
        self.parts = []

    def text(self, s):
        self.parts.append(s)

    @property
    def out(self):
        return "".join(self.parts)


def pretty(obj, cycle=False):
    p = Printer()
    assert obj._repr_pretty_(p, cycle) is None
    return p.out


def cells(table):
    """{label: value} of a two-column HTML table, unescaped."""
    pairs = re.findall(r'<th style="text-align:left">(.*?)</th><td style="text-align:left">'
                       r'(.*?)</td>', table)
    return {html.unescape(k): html.unescape(v) for k, v in pairs}


def grid(table):
    """(header, rows) of an HTML table with a header row, unescaped."""
    head = re.search(r"<thead>(.*?)</thead>", table).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", table).group(1)
    header = [html.unescape(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)]
    return header, rows


def caption(table):
    return html.unescape(re.search(r"<caption[^>]*>(.*?)</caption>", table).group(1))


def test_html_table_escapes_every_cell_caption_and_header():
    nasty = "<script>alert('x & \"y\"')</script>"
    out = gpuhost._core.html_table(nasty, [nasty, 2], [(nasty, 3.5), [None, nasty]])
    assert "<script>" not in out
    assert out.count("&lt;script&gt;alert(&#x27;x &amp; &quot;y&quot;&#x27;)&lt;/script&gt;") == 4
    assert caption(out) == nasty
    header, rows = grid(out)
    assert header == [nasty, "2"] and rows == [[nasty, "3.5"], ["None", nasty]]


def test_html_table_refuses_rows_that_are_not_sequences():
    with pytest.raises(TypeError, match="every row of an HTML table must be a sequence"):
        gpuhost._core.html_table(None, None, [5])
    with pytest.raises(TypeError, match="the rows of an HTML table must be a sequence"):
        gpuhost._core.html_table(None, None, 5)


def test_format_bytes_uses_binary_units():
    fmt = gpuhost._core.format_bytes
    assert [fmt(n) for n in (0, 1023, 1024, 1536, 3 << 20, 80 << 30)] == \
        ["0 bytes", "1023 bytes", "1.0 KiB", "1.5 KiB", "3.0 MiB", "80.0 GiB"]
    with pytest.raises(OverflowError):
        fmt(-1)


def test_pretty_refuses_rows_that_are_not_pairs():
    with pytest.raises(TypeError, match=r"\(label, value\) tuple"):
        gpuhost._core.pretty(Printer(), False, 1, [("a", 1, 2)])


@pytest.mark.parametrize("index", [0, -1])
def test_device_html_shows_its_facts(index):
    dev = gpuhost.gpus[index]
    table = dev._repr_html_()
    assert caption(table) == "CUDA device %d" % dev.id
    assert cells(table) == {
        "name": dev.name,
        "compute capability": "%d.%d" % dev.compute_capability,
        "memory": gpuhost._core.format_bytes(dev.total_memory),
        "multiprocessors": str(dev.MULTIPROCESSOR_COUNT),
        "max threads per block": str(dev.MAX_THREADS_PER_BLOCK),
        "PCI bus id": dev.pci_bus_id,
        "UUID": dev.uuid,
    }


def test_device_pretty_is_repr_then_facts_and_repr_alone_in_a_cycle():
    dev = gpuhost.gpus[0]
    lines = pretty(dev).split("\n")
    assert lines[0] == repr(dev)
    assert "  compute capability: %d.%d" % dev.compute_capability in lines
    assert "  UUID: %s" % dev.uuid in lines
    assert len(lines) == 8
    assert pretty(dev, cycle=True) == repr(dev)


def test_device_pretty_refuses_a_bad_call():
    with pytest.raises(TypeError):
        gpuhost.gpus[0]._repr_pretty_(Printer())


def test_ipython_pretty_uses_the_displays():
    lib = pytest.importorskip("IPython.lib.pretty")
    dev = gpuhost.gpus[0]
    assert lib.pretty(dev) == pretty(dev)
    arr = gpuhost.to_device(np.arange(3, dtype=np.int16))
    assert lib.pretty(arr) == pretty(arr)
    assert lib.pretty(gpuhost.gpus) == pretty(gpuhost.gpus)


def test_device_list_html_has_a_row_per_device():
    table = gpuhost.gpus._repr_html_()
    header, rows = grid(table)
    assert header == ["id", "name", "compute capability", "memory", "multiprocessors",
                      "PCI bus id", "UUID", "supported"]
    assert len(rows) == len(gpuhost.gpus)
    for dev, row in zip(gpuhost.gpus, rows):
        assert row == [str(dev.id), dev.name, "%d.%d" % dev.compute_capability,
                       gpuhost._core.format_bytes(dev.total_memory),
                       str(dev.MULTIPROCESSOR_COUNT), dev.pci_bus_id, dev.uuid, "yes"]
    n = len(gpuhost.gpus)
    assert caption(table) == "Found %d CUDA device%s, %d supported" % (n, "s" * (n != 1), n)


def test_device_list_pretty_has_a_line_per_device():
    lines = pretty(gpuhost.gpus).split("\n")
    assert lines[0] == "<gpus: %d device%s>" % (len(gpuhost.gpus), "s" * (len(gpuhost.gpus) != 1))
    for dev, line in zip(gpuhost.gpus, lines[1:]):
        assert line == "  %d: %s, compute capability %d.%d, %s" % (
            dev.id, dev.name, *dev.compute_capability,
            gpuhost._core.format_bytes(dev.total_memory))
    assert len(lines) == 1 + len(gpuhost.gpus)
    assert pretty(gpuhost.gpus, cycle=True) == "<gpus>"


def test_summary_is_what_detect_prints(capsys):
    found = gpuhost.summary()
    assert isinstance(found, gpuhost.DeviceSummary)
    assert gpuhost.detect() is True
    assert capsys.readouterr().out == str(found) + "\n"
    assert bool(found) and found.error is None
    assert found.devices == gpuhost.list_devices()
    assert found.supported == len(gpuhost.gpus)
    assert pretty(found) == str(found)
    assert pretty(found, cycle=True) == repr(found)
    assert repr(found) == "<gpuhost.DeviceSummary: %s>" % caption(found._repr_html_())


def test_summary_html_is_the_device_table():
    found = gpuhost.summary()
    assert found._repr_html_() == gpuhost.gpus._repr_html_()
    assert [row[6] for row in grid(found._repr_html_())[1]] == [d.uuid for d in gpuhost.gpus]


def test_summary_and_device_list_without_a_driver_say_why():
    proc = run_python(
        "import gpuhost\n"
        "s = gpuhost.summary()\n"
        "print(bool(s), s.devices, type(s.error).__name__)\n"
        "print(s._repr_html_())\n"
        "print(gpuhost.gpus._repr_html_() == s._repr_html_())\n",
        {"GPUHOST_CUDA_DRIVER": "/nonexistent/<lib>cuda.so"})
    assert proc.returncode == 0, proc.stderr
    first, table, same = proc.stdout.strip().split("\n")
    assert first == "False [] CudaSupportError"
    assert caption(table).startswith("CUDA driver not usable: no CUDA driver library was found")
    assert "/nonexistent/&lt;lib&gt;cuda.so" in table and "<lib>" not in table
    assert grid(table)[1] == [] and same == "True"


def test_device_array_html_shows_layout_without_copying(fake):
    host = np.random.default_rng().standard_normal((6, 8)).astype(np.float32)
    arr = gpuhost.to_device(host)[1:5, ::2]
    before = [fake.calls(name) for name in COPIES]
    table = arr._repr_html_()
    text = pretty(arr)
    assert [fake.calls(name) for name in COPIES] == before
    assert caption(table).startswith("gpuhost.DeviceArray (in device memory")
    assert cells(table) == {
        "shape": "(4, 4)", "dtype": "float32", "strides": "(32, 8)", "layout": "strided",
        "nbytes": "64 bytes", "device": "%d (%s)" % (arr.device.id, arr.device.name),
        "stream": "none (the default stream)", "address": hex(arr.ptr),
    }
    assert text.split("\n")[0] == repr(arr) and "  layout: strided" in text
    for value in host[1:5, ::2].ravel()[:3]:
        assert repr(float(value)) not in table


@pytest.mark.parametrize("shape, order, layout", [
    ((3, 5), "C", "C contiguous"), ((3, 5), "F", "Fortran contiguous"),
    ((7,), "C", "C and Fortran contiguous"),
])
def test_device_array_html_names_the_layout(shape, order, layout):
    arr = gpuhost.device_array(shape, np.float64, order=order)
    got = cells(arr._repr_html_())
    assert got["layout"] == layout and got["shape"] == str(shape)
    assert got["nbytes"] == gpuhost._core.format_bytes(arr.nbytes)


def test_device_array_html_names_its_bound_stream_and_device():
    with gpuhost.gpus[-1]:
        s = gpuhost.stream()
        arr = gpuhost.device_array(1 << 20, np.uint8, stream=s).bind(s)
    got = cells(arr._repr_html_())
    assert got["stream"] == repr(s) and got["nbytes"] == "1.0 MiB"
    dev = gpuhost.gpus[-1]
    assert got["device"] == "%d (%s)" % (dev.id, dev.name)


def test_event_html_shows_device_and_flags():
    ev = gpuhost.event(timing=False, blocking_sync=True)
    got = cells(ev._repr_html_())
    assert got == {"device": "%d (%s)" % (ev.device.id, ev.device.name), "timing": "False",
                   "recorded": "False", "blocking sync": "True", "interprocess": "False",
                   "handle": hex(ev.handle)}
    ev.record()
    assert cells(ev._repr_html_())["recorded"] == "True"
    assert caption(ev._repr_html_()) == "CUDA event"
    lines = pretty(ev).split("\n")
    assert lines[0] == repr(ev) and "  timing: False" in lines and len(lines) == 7
    assert pretty(ev, cycle=True) == repr(ev)


def test_pool_html_shows_its_statistics():
    pool = gpuhost._core.Pool("device", "cache")
    blocks = [pool.allocate(n) for n in (1000, 5000)]
    held = pool.allocate(70000)
    del held
    got = cells(pool._repr_html_())
    fmt = gpuhost._core.format_bytes
    assert got == {"kind": "device", "mode": "cache",
                   "device": "%d (%s)" % (pool.context.device.id, pool.context.device.name),
                   "in use": "%s in 2 blocks" % fmt(pool.used_bytes),
                   "held for reuse": "%s in 1 blocks" % fmt(pool.free_bytes), "limit": "none"}
    pool.limit = 3 << 20
    assert cells(pool._repr_html_())["limit"] == "3.0 MiB"
    lines = pretty(pool).split("\n")
    assert lines[0] == repr(pool) and "  limit: 3.0 MiB" in lines
    del blocks


def test_pycuda_pools_show_their_statistics():
    pool = gpuhost.tools.DeviceMemoryPool()
    a = pool.allocate(3000)
    got = cells(pool._repr_html_())
    assert caption(pool._repr_html_()) == "DeviceMemoryPool"
    assert got["active"] == "%s in 1 blocks" % gpuhost._core.format_bytes(pool.active_bytes)
    assert got["held"] == "0 bytes in 0 blocks" and got["kind"] == "device"
    assert pretty(pool).split("\n")[0] == repr(pool)
    hpool = gpuhost.tools.PageLockedMemoryPool()
    h = hpool.allocate((4, 4), np.float64)
    del h
    got = cells(hpool._repr_html_())
    assert got["kind"] == "pinned" and got["held"].endswith("in 1 blocks")
    del a


def test_cupy_pools_show_a_row_per_device(device0):
    pool = gpuhost.memory.MemoryPool()
    a = pool.malloc(1000)
    with gpuhost.gpus[-1]:
        b = pool.malloc(5000)
        del b
    header, rows = grid(pool._repr_html_())
    assert header == ["device", "in use", "blocks in use", "held", "blocks held", "limit"]
    dev0, devn = gpuhost.gpus[0], gpuhost.gpus[-1]
    if dev0 == devn:  # one device: both allocations are in its row
        expect = {("%d (%s)" % (dev0.id, dev0.name), "1.0 KiB", "1", "5.0 KiB", "1", "none")}
    else:
        expect = {("%d (%s)" % (dev0.id, dev0.name), "1.0 KiB", "1", "0 bytes", "0", "none"),
                  ("%d (%s)" % (devn.id, devn.name), "0 bytes", "0", "5.0 KiB", "1", "none")}
    assert {tuple(r) for r in rows} == expect
    lines = pretty(pool).split("\n")
    assert lines[0] == repr(pool) and len(lines) == 1 + len(expect)
    assert any(line.startswith("  device 0 (") and "blocks in use: 1" in line for line in lines)
    pinned = gpuhost.memory.PinnedMemoryPool()
    p = pinned.malloc(100)
    assert grid(pinned._repr_html_())[1][0][2] == "1"
    del a, p
