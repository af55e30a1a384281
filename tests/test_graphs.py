"""CUDA graphs (csrc/graphs/graph.c, gpuhost/graphs.py, Stream.begin_capture/end_capture): capture,
explicit nodes, instantiate, launch, update, the pool's rule under capture, the errors.

Copies, memsets, host functions and events run on the fake driver too (its graphs replay
the captured ops); kernels need a real GPU.
"""
import gc

import numpy as np
import pytest

import gpuhost
from gpuhost import GraphUpdateError, StreamCaptureError
from gpuhost.compat import cupy as cpcuda

rng = np.random.default_rng()

SAXPY = r"""
extern "C" __global__
void saxpy(float a, float *x, float *y, size_t n)
{
    size_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < n) {
        y[tid] = a * x[tid] + y[tid];
    }
}
"""


def random_ints(n, dtype=np.int32):
    return rng.integers(-2**30, 2**30, size=n).astype(dtype)


# ---- capture and replay (copies, host functions) ----

def test_capture_replays_copies_and_host_functions_each_launch():
    s = gpuhost.stream()
    src = gpuhost.pinned_array(1024, np.int32)
    dst = gpuhost.pinned_array(1024, np.int32)
    d = gpuhost.device_array(1024, np.int32)
    seen = []
    with gpuhost.graph_capture(s) as cap:
        d.copy_to_device(src, stream=s)
        s.launch_host_func(seen.append, "ran")
        d.copy_to_host(dst, stream=s)
        assert s.is_capturing()
    assert not s.is_capturing()
    graph = cap.graph
    assert [n.type for n in graph.nodes] == ["memcpy", "host", "memcpy"]
    assert seen == []  # captured work does not run
    for i in range(5):
        data = random_ints(1024)
        src[:] = data
        graph.launch(s)
        s.synchronize()
        np.testing.assert_array_equal(dst, data)
        assert seen == ["ran"] * (i + 1)


def test_begin_end_capture_and_instantiate_launch_on_other_streams():
    s, other = gpuhost.stream(), gpuhost.stream()
    src = gpuhost.pinned_array(64, np.float64)
    dst = gpuhost.pinned_array(64, np.float64)
    d = gpuhost.device_array(64, np.float64)
    s.begin_capture("relaxed")
    d.copy_to_device(src, stream=s)
    d.copy_to_host(dst, stream=s)
    graph = s.end_capture()
    exe = graph.instantiate()
    for stream in (other, s, None):
        data = rng.standard_normal(64)
        src[:] = data
        exe.launch(stream)
        (stream or gpuhost.default_stream()).synchronize()
        np.testing.assert_array_equal(dst, data)


def test_add_callback_is_captured_as_a_host_node():
    s = gpuhost.stream()
    calls = []
    with gpuhost.graph_capture(s) as cap:
        s.add_callback(lambda stream, status, arg: calls.append((stream, status, arg)), 42)
    for _ in range(3):
        cap.graph.launch(s)
    s.synchronize()
    assert calls == [(s, 0, 42)] * 3


def test_events_in_a_capture_are_dependencies_and_event_nodes_record():
    s = gpuhost.stream()
    ev = gpuhost.event()
    with gpuhost.graph_capture(s) as cap:
        s.record(ev)  # inside a capture, as the driver does: ordering, not nodes
        s.wait_event(ev)
    assert [n.type for n in cap.graph.nodes] == []
    g = gpuhost.Graph()
    rec = g.add_event_record(ev)
    g.add_event_wait(ev, depends_on=rec)
    assert [n.type for n in g.nodes] == ["event_record", "event_wait"]
    g.launch(s)
    s.synchronize()
    assert ev.query()
    with pytest.raises(TypeError, match="gpuhost Event"):
        g.add_event_record(None)


def test_capture_block_that_raises_ends_the_capture():
    s = gpuhost.stream()
    with pytest.raises(KeyError):
        with gpuhost.graph_capture(s):
            raise KeyError("x")
    assert not s.is_capturing()
    s.synchronize()


def test_capture_modes():
    s = gpuhost.stream()
    for mode in ("global", "thread_local", "relaxed", 0, 1, 2):
        s.begin_capture(mode)
        s.end_capture()
    with pytest.raises(ValueError, match="capture mode must be"):
        s.begin_capture("loose")
    with pytest.raises(ValueError, match="capture mode must be"):
        s.begin_capture(7)
    assert not s.is_capturing()


# ---- explicit graphs ----

def test_explicit_memset_memcpy_nodes_with_dependencies():
    s = gpuhost.stream()
    d = gpuhost.device_array(256, np.int32)
    out = gpuhost.pinned_array(256, np.int32)
    value = int(rng.integers(0, 2**31))
    g = gpuhost.Graph()
    first = g.add_memset(d, value)
    copy = g.add_memcpy(out, d, depends_on=[first])
    done = g.add_empty(depends_on=copy)
    assert [n.type for n in g.nodes] == ["memset", "memcpy", "empty"]
    assert first in g.nodes and done.graph is g
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(out, np.full(256, value, np.int32))


def test_memset_node_element_sizes_and_float_values():
    s = gpuhost.stream()
    d16 = gpuhost.device_array(100, np.uint16)
    f32 = gpuhost.device_array(100, np.float32)
    h16 = gpuhost.pinned_array(100, np.uint16)
    h32 = gpuhost.pinned_array(100, np.float32)
    g = gpuhost.Graph()
    a = g.add_memset(d16, 0xBEEF)
    b = g.add_memset(f32, 2.5)
    g.add_memcpy(h16, d16, depends_on=a)
    g.add_memcpy(h32, f32, depends_on=b)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(h16, np.full(100, 0xBEEF, np.uint16))
    np.testing.assert_array_equal(h32, np.full(100, 2.5, np.float32))
    with pytest.raises(ValueError, match="element_size must be 1, 2 or 4"):
        g.add_memset(d16, 1, element_size=8)
    with pytest.raises(OverflowError, match="does not fit 2 bytes"):
        g.add_memset(d16, 1 << 20)
    with pytest.raises(ValueError, match="does not fit dst"):
        g.add_memset(d16, 1, count=101)


def test_memcpy_node_sizes_are_checked():
    g = gpuhost.Graph()
    a = gpuhost.device_array(10, np.int32)
    b = gpuhost.device_array(12, np.int32)
    with pytest.raises(ValueError, match="differ in size"):
        g.add_memcpy(a, b)
    with pytest.raises(ValueError, match="past an array of 40 bytes"):
        g.add_memcpy(a, b, nbytes=48)
    with pytest.raises(TypeError, match="must be a device array"):
        g.add_memcpy(a, "b")
    with pytest.raises(ValueError, match="C-contiguous"):
        g.add_memcpy(np.zeros((4, 4))[:, ::2], a)
    with pytest.raises(TypeError, match="nbytes is needed"):
        g.add_memcpy(a.device_ctypes_pointer.value, b.device_ctypes_pointer.value)
    assert g.nodes == []


def test_host_nodes_child_graphs_and_clone():
    s = gpuhost.stream()
    calls = []
    child = gpuhost.Graph()
    child.add_host(calls.append, "child")
    g = gpuhost.Graph()
    first = g.add_host(calls.append, "first")
    sub = g.add_child_graph(child, depends_on=first)
    g.add_host(lambda: calls.append("no arg"), depends_on=sub)
    clone = g.clone()
    assert [n.type for n in clone.nodes] == ["host", "graph", "host"]
    g.launch(s)
    clone.launch(s)
    s.synchronize()
    assert calls == ["first", "child", "no arg"] * 2
    with pytest.raises(ValueError, match="its own child"):
        g.add_child_graph(g)
    with pytest.raises(TypeError, match="must be callable"):
        g.add_host(3)


def test_dependencies_are_checked():
    g, other = gpuhost.Graph(), gpuhost.Graph()
    n = other.add_empty()
    with pytest.raises(ValueError, match="node of another graph"):
        g.add_empty(depends_on=[n])
    with pytest.raises(TypeError, match="must hold GraphNodes"):
        g.add_empty(depends_on=[1])
    with pytest.raises(TypeError, match="GraphNode or a sequence"):
        g.add_empty(depends_on=5)


def test_debug_dot_print(tmp_path):
    g = gpuhost.Graph()
    g.add_empty()
    path = tmp_path / "g.dot"
    g.debug_dot_print(str(path))
    assert path.read_text().startswith("digraph")
    with pytest.raises(gpuhost.CudaAPIError):
        g.debug_dot_print(str(tmp_path / "no" / "such" / "dir.dot"))


def test_relaunch_after_nodes_were_added_reinstantiates():
    s = gpuhost.stream()
    calls = []
    g = gpuhost.Graph()
    g.add_host(calls.append, 1)
    g.launch(s)
    g.add_host(calls.append, 2)
    g.launch(s)
    s.synchronize()
    assert calls == [1, 1, 2]


# ---- update ----

def test_update_takes_new_parameters_and_refuses_another_topology():
    s = gpuhost.stream()
    d = gpuhost.device_array(64, np.int32)
    out = gpuhost.pinned_array(64, np.int32)

    def build(value):
        g = gpuhost.Graph()
        g.add_memcpy(out, d, depends_on=g.add_memset(d, value))
        return g

    exe = build(1).instantiate()
    exe.update(build(9))
    exe.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(out, np.full(64, 9, np.int32))
    other = gpuhost.Graph()
    other.add_empty()
    with pytest.raises(GraphUpdateError, match="topology differs"):
        exe.update(other)
    with pytest.raises(TypeError, match="takes a Graph"):
        exe.update(None)
    exe.launch(s)  # still usable
    s.synchronize()


# ---- what cannot be captured: clear errors ----

def test_synchronize_and_query_while_capturing_are_refused_before_the_driver():
    s = gpuhost.stream()
    s.begin_capture()
    with pytest.raises(StreamCaptureError, match=r"synchronize\(\) cannot be called while"):
        s.synchronize()
    with pytest.raises(StreamCaptureError, match=r"query\(\) cannot be called while"):
        s.query()
    assert isinstance(s.end_capture(), gpuhost.Graph)  # the capture was not invalidated


def test_capture_misuse():
    s = gpuhost.stream()
    with pytest.raises(StreamCaptureError, match="legacy default stream"):
        gpuhost.default_stream().begin_capture()
    with pytest.raises(StreamCaptureError, match="legacy default stream"):
        gpuhost.legacy_default_stream().begin_capture()
    with pytest.raises(StreamCaptureError, match="without begin_capture"):
        s.end_capture()
    s.begin_capture()
    with pytest.raises(StreamCaptureError, match="already capturing"):
        s.begin_capture()
    s.end_capture()
    err = StreamCaptureError("own check")
    assert err.code is None and str(err) == "own check"
    assert issubclass(StreamCaptureError, gpuhost.CudaAPIError)


def test_pageable_copy_under_capture_is_a_clear_error():
    s = gpuhost.stream()
    n = (8 << 20) // 4  # past the staging threshold: the staged pageable path
    host = np.zeros(n, np.int32)
    d = gpuhost.device_array(n, np.int32)
    s.begin_capture()
    try:
        with pytest.raises(StreamCaptureError, match="pageable host memory cannot be captured"):
            d.copy_to_device(host, stream=s)
        with pytest.raises(StreamCaptureError, match="pageable host memory cannot be captured"):
            d.copy_to_host(host, stream=s)
    finally:
        assert isinstance(s.end_capture(), gpuhost.Graph)  # the capture is intact


def test_driver_refusal_is_a_stream_capture_error():
    s = gpuhost.stream()  # blocking: the legacy stream may not wait on it while it captures
    host = gpuhost.pinned_array(16, np.int32)
    d = gpuhost.device_array(16, np.int32)
    s.begin_capture()
    try:
        with pytest.raises(StreamCaptureError) as info:
            d.copy_to_host(host)  # synchronous: on the legacy default stream
        assert info.value.name == "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"
        assert info.value.call == "cuMemcpyDtoH"
    finally:
        try:
            s.end_capture()
        except StreamCaptureError:
            pass  # a driver may have invalidated the capture
    assert not s.is_capturing()


# ---- the caching pool under capture ----

def test_pool_blocks_of_a_capture_belong_to_the_graph():
    pool = gpuhost._core.default_pool(gpuhost.current_context())
    if pool.mode != "cache":
        pytest.skip("the caching pool's rule")
    s = gpuhost.stream()
    before = gpuhost.device_array(4096, np.uint8, stream=s)
    old_ptr = before.device_ctypes_pointer.value
    with gpuhost.graph_capture(s) as cap:
        inside = gpuhost.device_array(4096, np.uint8, stream=s)
        inside_ptr = inside.device_ctypes_pointer.value
        del inside, before  # freed on the capturing stream: held by the capture
    gc.collect()
    fresh = [gpuhost.device_array(4096, np.uint8, stream=s) for _ in range(4)]
    ptrs = {a.device_ctypes_pointer.value for a in fresh}
    assert inside_ptr not in ptrs and old_ptr not in ptrs
    del fresh
    graph = cap.graph
    graph.launch(s)
    s.synchronize()
    used = pool.n_used_blocks
    del graph, cap
    gc.collect()
    assert pool.n_used_blocks == used - 2  # both back in the pool with the graph gone


# ---- driver resources ----

@pytest.mark.fake
def test_graph_resources_are_freed(fake):
    gc.collect()
    graphs, execs = fake.live("graphs"), fake.live("graph_execs")
    s = gpuhost.stream()
    g = gpuhost.Graph()
    g.add_empty()
    exe = g.instantiate()
    g.launch(s)
    with gpuhost.graph_capture(s) as cap:
        pass
    assert fake.live("graphs") == graphs + 2
    assert fake.live("graph_execs") == execs + 2
    del g, exe, cap
    s.synchronize()
    gc.collect()
    assert fake.live("graphs") == graphs
    assert fake.live("graph_execs") == execs


@pytest.mark.fake
def test_driver_failures_are_raised_and_leak_nothing(fake):
    gc.collect()
    graphs = fake.live("graphs")
    g = gpuhost.Graph()
    fake.fail("cuGraphInstantiateWithFlags", 999)
    with pytest.raises(gpuhost.CudaAPIError, match="cuGraphInstantiateWithFlags"):
        g.instantiate()
    fake.fail("cuGraphAddEmptyNode", 2)
    with pytest.raises(gpuhost.CudaAPIError, match="cuGraphAddEmptyNode"):
        g.add_empty()
    assert g.nodes == []
    fake.fail("cuStreamBeginCapture", 2)
    s = gpuhost.stream()
    with pytest.raises(gpuhost.CudaAPIError, match="cuStreamBeginCapture"):
        s.begin_capture()
    assert not s.is_capturing()
    fake.fail("cuGraphLaunch", 2)
    with pytest.raises(gpuhost.CudaAPIError, match="cuGraphLaunch"):
        g.launch(s)
    del g
    gc.collect()
    assert fake.live("graphs") == graphs


@pytest.mark.fake
def test_fake_kernel_nodes_are_unsupported_like_launches():
    g = gpuhost.Graph()
    assert g.nodes == []
    with pytest.raises(TypeError, match="launch configuration"):
        g.add_kernel(None)


def test_context_synchronize_while_capturing_is_a_capture_error():
    s = gpuhost.stream()
    s.begin_capture("relaxed")
    try:
        with pytest.raises(StreamCaptureError):
            gpuhost.synchronize()
    finally:
        try:
            s.end_capture()
        except StreamCaptureError:
            pass


# ---- compat.cupy ----

def test_cupy_names_capture_and_launch():
    s = cpcuda.Stream(non_blocking=True)
    src = gpuhost.pinned_array(32, np.int64)
    dst = gpuhost.pinned_array(32, np.int64)
    d = gpuhost.device_array(32, np.int64)
    seen = []
    with s:
        s.begin_capture()
        assert s.is_capturing()
        d.copy_to_device(src, stream=s)
        s.launch_host_func(seen.append, 7)
        d.copy_to_host(dst, stream=s)
        g = s.end_capture()
        assert isinstance(g, cpcuda.graph.Graph)
        data = random_ints(32, np.int64)
        src[:] = data
        g.upload()
        g.launch()  # on the current stream: s
        s.synchronize()
    np.testing.assert_array_equal(dst, data)
    assert seen == [7]
    assert g.debug_dot_str().startswith("digraph")
    with pytest.raises(NotImplementedError):
        cpcuda.graph.Graph()
    with pytest.raises(RuntimeError, match="default"):
        cpcuda.Stream.null.begin_capture()


# ---- kernels (a real GPU) ----

@pytest.fixture(scope="module")
def saxpy():
    return gpuhost.SourceModule(SAXPY).get_function("saxpy")


@pytest.mark.gpu
def test_saxpy_loop_of_100_kernels_replayed_1000_times_exactly(saxpy):
    n = 4096
    s = gpuhost.stream()
    x = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    a = np.float32(0.5)
    dx, dy = gpuhost.to_device(x), gpuhost.to_device(y0)
    with gpuhost.graph_capture(s) as cap:
        for _ in range(100):
            saxpy[(n + 255) // 256, 256, s](a, dx, dy, n)
    assert len(cap.graph.nodes) == 100
    assert {node.type for node in cap.graph.nodes} == {"kernel"}
    exe = cap.graph.instantiate()
    for _ in range(1000):
        exe.launch(s)
    s.synchronize()
    expected = y0.copy()
    for _ in range(100 * 1000):
        expected = a * x + expected  # float32 throughout, as the kernel computes
    np.testing.assert_array_equal(dy.copy_to_host(), expected)


@pytest.mark.gpu
def test_add_kernel_and_set_kernel_args(saxpy):
    n = 1000
    s = gpuhost.stream()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = rng.standard_normal(n).astype(np.float32)
    dx, dy, dz = gpuhost.to_device(x), gpuhost.to_device(y), gpuhost.to_device(z)
    g = gpuhost.Graph()
    node = g.add_kernel(saxpy[4, 256], np.float32(2.0), dx, dy, n)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        g.add_kernel(saxpy[4, 256], 2.0, dx, dy)
    with pytest.raises(TypeError, match="parameter 1"):
        g.add_kernel(saxpy[4, 256], 2.0, 1.5, dy, n)
    exe = g.instantiate()
    exe.launch(s)
    exe.set_kernel_args(node, np.float32(4.0), dx, dz, n)  # new scalar and pointer
    exe.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(dy.copy_to_host(), np.float32(2.0) * x + y)
    np.testing.assert_array_equal(dz.copy_to_host(), np.float32(4.0) * x + z)
    with pytest.raises(TypeError, match="parameter 0"):
        exe.set_kernel_args(node, dx, dx, dz, n)
    with pytest.raises(ValueError, match="kernel node"):
        exe.set_kernel_args(g.nodes[0], np.float32(1.0), dx, dz, n)


@pytest.mark.gpu
def test_launching_a_graph_whose_module_was_unloaded_is_refused():
    mod = gpuhost.SourceModule(SAXPY)
    k = mod.get_function("saxpy")
    s = gpuhost.stream()
    d = gpuhost.device_array(16, np.float32)
    with gpuhost.graph_capture(s) as cap:
        k[1, 16, s](np.float32(1), d, d, 16)
    exe = cap.graph.instantiate()
    exe.launch(s)
    s.synchronize()
    k.module.unload()
    with pytest.raises(gpuhost.CudaAPIError, match="unload"):
        exe.launch(s)
    with pytest.raises(gpuhost.CudaAPIError, match="unload"):
        cap.graph.instantiate()


def test_the_pool_grows_during_a_global_capture():
    # cuMemAlloc is refused while a stream captures in global mode; the pool relaxes this
    # thread's mode around it, so a capture may allocate a size never cached before.
    s = gpuhost.stream()
    with gpuhost.graph_capture(s, mode="global") as cap:
        big = gpuhost.device_array((3 << 20) + int(rng.integers(1, 4096)), np.uint8, stream=s)
        big_ptr = big.device_ctypes_pointer.value
    assert isinstance(cap.graph, gpuhost.Graph)
    assert big_ptr != 0


def _other_librarys_alloc(fake):
    """cuMemAlloc and cuMemFree as another library (PyTorch's allocator) calls them, straight
    to the driver: (alloc(nbytes) -> CUresult, free(ptr))."""
    import ctypes

    def entry(name, *argtypes):
        fn, found = ctypes.c_void_p(), ctypes.c_int()
        fake._lib.cuGetProcAddress_v2(name.encode(), ctypes.byref(fn), 13000, ctypes.c_uint64(0),
                                      ctypes.byref(found))
        return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(fn.value)

    mem_alloc = entry("cuMemAlloc", ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t)
    mem_free = entry("cuMemFree", ctypes.c_uint64)
    exchange = entry("cuThreadExchangeStreamCaptureMode", ctypes.POINTER(ctypes.c_int))

    def alloc(nbytes):
        # in the thread's default (global) mode, whatever an earlier test left it in
        mode = ctypes.c_int(0)
        exchange(ctypes.byref(mode))
        ptr = ctypes.c_uint64()
        res = mem_alloc(ctypes.byref(ptr), nbytes)
        if res == 0:
            mem_free(ptr.value)
        exchange(ctypes.byref(mode))
        return res

    return alloc


CAPTURE_UNSUPPORTED = 900  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED


@pytest.mark.parametrize("mode, other_thread, own_thread", [
    (None, 0, CAPTURE_UNSUPPORTED),          # gpuhost's default: thread-local
    ("thread_local", 0, CAPTURE_UNSUPPORTED),
    ("global", CAPTURE_UNSUPPORTED, CAPTURE_UNSUPPORTED),  # as PyTorch's own capture
    ("relaxed", 0, 0),                       # as CuPy's
])
def test_a_capture_refuses_other_threads_allocations_only_in_global_mode(fake, mode,
                                                                         other_thread, own_thread):
    # Another library's cudaMalloc in another thread (a DataLoader's, a second model's) goes
    # on while gpuhost captures in its default mode; in this thread it would break the capture.
    import threading

    alloc = _other_librarys_alloc(fake)
    gpuhost.current_context()
    s = gpuhost.stream()
    got = {}
    s.begin_capture() if mode is None else s.begin_capture(mode)
    try:
        def other():
            with s.context.device:  # the other library's thread, the same primary context
                got["other"] = alloc(4096)

        t = threading.Thread(target=other)
        t.start()
        t.join(30)
        got["own"] = alloc(4096)
    finally:
        try:
            s.end_capture()
        except StreamCaptureError:
            pass  # the own thread's refused call invalidated it, as the driver's does
    assert (got["other"], got["own"]) == (other_thread, own_thread)


# ---- conditional nodes ----

def _fill_node(graph, dst, value):
    return graph.add_memset(dst, value)


def test_conditional_if_else_and_switch_by_default_values():
    s = gpuhost.stream()
    d = gpuhost.device_array(8, np.int32)
    out = gpuhost.pinned_array(8, np.int32)
    for default, expected in ((1, 11), (0, 22)):
        g = gpuhost.Graph()
        h = g.conditional_handle(default=default)
        node, (then, other) = g.add_conditional(h, "if", size=2)
        assert node.type == "conditional"
        then.add_memset(d, 11)
        other.add_memset(d, 22)
        g.add_memcpy(out, d, depends_on=node)
        g.launch(s)
        s.synchronize()
        np.testing.assert_array_equal(out, np.full(8, expected, np.int32))
    g = gpuhost.Graph()
    h = g.conditional_handle(default=2)
    node, bodies = g.add_conditional(h, "switch", size=3)
    for i, body in enumerate(bodies):
        body.add_memset(d, 100 + i)
    g.add_memcpy(out, d, depends_on=node)
    g.instantiate().launch(s)
    s.synchronize()
    np.testing.assert_array_equal(out, np.full(8, 102, np.int32))


def test_conditional_misuse():
    g = gpuhost.Graph()
    h = g.conditional_handle()
    with pytest.raises(ValueError, match="kind must be"):
        g.add_conditional(h, "unless")
    with pytest.raises(ValueError, match="1 or 2 bodies"):
        g.add_conditional(h, "if", size=3)
    with pytest.raises(ValueError, match="1 or 2 bodies"):
        g.add_conditional(h, "while", size=2)
    with pytest.raises(OverflowError):
        g.conditional_handle(default=1 << 40)
    with pytest.raises(gpuhost.CudaAPIError):
        gpuhost.Graph().add_conditional(h)  # a handle of another graph
    assert g.nodes == []


@pytest.mark.fake
def test_fake_while_with_a_nonzero_value_is_refused_at_launch():
    s = gpuhost.stream()
    g = gpuhost.Graph()
    node, (body,) = g.add_conditional(g.conditional_handle(default=0), "while")
    body.add_empty()
    g.launch(s)  # value 0: the body never runs
    g2 = gpuhost.Graph()
    g2.add_conditional(g2.conditional_handle(default=1), "while")
    with pytest.raises(gpuhost.CudaAPIError, match="CUDA_ERROR_NOT_SUPPORTED"):
        g2.launch(s)
    s.synchronize()


COUNTDOWN = r"""
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);

extern "C" __global__ void count_down(unsigned long long handle, int *left, int *total)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *total += *left;
        *left -= 1;
        cudaGraphSetConditional(handle, *left > 0 ? 1u : 0u);
    }
}
"""


@pytest.mark.gpu
def test_while_node_runs_until_a_kernel_clears_the_handle():
    k = gpuhost.SourceModule(COUNTDOWN).get_function("count_down")
    s = gpuhost.stream()
    n = int(rng.integers(3, 30))
    left = gpuhost.to_device(np.array([n], np.int32))
    total = gpuhost.to_device(np.array([0], np.int32))
    g = gpuhost.Graph()
    h = g.conditional_handle(default=1)
    node, (body,) = g.add_conditional(h, "while")
    body.add_kernel(k[1, 32], h, left, total)
    exe = g.instantiate()
    exe.launch(s)
    s.synchronize()
    assert left.copy_to_host()[0] == 0
    assert total.copy_to_host()[0] == n * (n + 1) // 2
    left.copy_to_device(np.array([2], np.int32))
    exe.launch(s)  # the default value is assigned again at each launch
    s.synchronize()
    assert total.copy_to_host()[0] == n * (n + 1) // 2 + 3


def test_memsets_on_the_stream_are_captured():
    s = gpuhost.stream()
    d = gpuhost.device_array(64, np.int32, stream=s)
    out = gpuhost.pinned_array(64, np.int32)
    value = int(rng.integers(1, 1000))
    with gpuhost.graph_capture(s) as cap:
        d[:] = value  # a memset on the array's stream
        d.copy_to_host(out, stream=s)
    assert [n.type for n in cap.graph.nodes] == ["memset", "memcpy"]
    out[:] = 0
    cap.graph.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(out, np.full(64, value, np.int32))


@pytest.mark.gpu
def test_driver_mode_pool_allocations_become_graph_memory_nodes():
    pool = gpuhost._core.Pool(mode="driver")
    s = gpuhost.stream()
    with gpuhost.graph_capture(s) as cap:
        a = pool.allocate(1 << 20, stream=s)  # cuMemAllocAsync: captured
        del a  # cuMemFreeAsync on the capturing stream: captured too
    types = [n.type for n in cap.graph.nodes]
    assert types == ["mem_alloc", "mem_free"], types
    for _ in range(3):
        cap.graph.launch(s)
    s.synchronize()


@pytest.mark.fake
def test_frees_wait_for_the_end_of_a_capture(fake):
    # A free the garbage collector triggers during a capture would be a call the driver
    # refuses then (and the capture invalidated): gpuhost holds it until end_capture().
    s = gpuhost.stream()
    other = gpuhost.stream()
    pinned = gpuhost.pinned_array(1 << 20, np.uint8)
    gc.collect()
    streams, hosts = fake.live("streams"), fake.live("host_allocations")
    s.begin_capture()
    del other, pinned
    gc.collect()
    assert fake.live("streams") == streams
    graph = s.end_capture()
    assert isinstance(graph, gpuhost.Graph)
    assert fake.live("streams") == streams - 1
    assert fake.live("host_allocations") <= hosts


def test_a_capture_never_takes_blocks_cached_for_other_streams():
    # A block cached on another (busy) stream would have to be ordered after that stream's
    # work: a dependency outside the capture, which the driver refuses.  The pool gives the
    # capture fresh memory instead.
    other, s = gpuhost.stream(), gpuhost.stream()
    size = 12288 + int(rng.integers(1, 1024))
    cached = gpuhost.device_array(size, np.uint8, stream=other)
    cached_ptr = cached.device_ctypes_pointer.value
    del cached  # now cached on `other`'s lane
    gc.collect()
    with gpuhost.graph_capture(s) as cap:
        mine = gpuhost.device_array(size, np.uint8, stream=s)
        assert mine.device_ctypes_pointer.value != cached_ptr
    assert isinstance(cap.graph, gpuhost.Graph)


def test_graph_exec_and_node_misuse():
    with pytest.raises(TypeError, match="takes no arguments"):
        gpuhost.Graph(1)
    g, other = gpuhost.Graph(), gpuhost.Graph()
    empty = g.add_empty()
    foreign = other.add_empty()
    exe = g.instantiate()
    with pytest.raises(TypeError, match="takes one argument"):
        exe.launch(None, None)
    with pytest.raises(TypeError, match="takes one argument"):
        exe.launch(strean=None)
    with pytest.raises(TypeError, match="takes a GraphNode"):
        exe.set_kernel_args(1)
    with pytest.raises(ValueError, match="not of the graph this was made from"):
        exe.set_kernel_args(foreign)
    with pytest.raises(ValueError, match="a kernel node that Graph.add_kernel"):
        exe.set_kernel_args(empty, 1)
    with pytest.raises(TypeError, match="add_kernel\\(\\) got an unexpected keyword"):
        g.add_kernel(None, deps=())
    assert empty == g.nodes[0] and empty != foreign and hash(empty) == hash(g.nodes[0])


@pytest.mark.gpu
def test_add_kernel_refuses_cooperative_configurations(saxpy):
    d = gpuhost.device_array(16, np.float32)
    g = gpuhost.Graph()
    with pytest.raises(ValueError, match="cooperative and cluster launches are captured"):
        g.add_kernel(saxpy.configure(1, 16, cooperative=True), np.float32(1), d, d, 16)
    assert g.nodes == []
