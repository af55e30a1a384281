"""gpuhost's pytest plugin, loaded through the ``pytest11`` entry point once gpuhost is
installed (``-p gpuhost.pytest_plugin`` loads it from a checkout; ``-p no:gpuhost``
turns it off).

Markers
    ``cuda``: the test needs a usable CUDA device; ``gpus(n)``: at least n devices.
    Skipped with the reason otherwise.
Fixtures
    ``gpuhost_context``: the default device's primary context (make_default_context()),
    pushed for the test and popped after it.  ``gpuhost_device``: its Device.
    ``gpuhost_leak_check``: the same context; the test fails if gpuhost streams, events,
    modules or allocations it made are still alive when it ends, or if the device's free
    memory fell by more than ``--gpuhost-leak-tolerance``; the context is synchronized at
    the end so that an asynchronous error fails the test that caused it.
Options
    ``--gpuhost-device N``: run the tests on device N.  Under pytest-xdist, without it,
    worker ``gw<k>`` runs on device ``k % device count``.

How the device is chosen: with ``select_device(N)`` in the test process's main thread
(and ``CUDA_DEVICE=N`` in its environment, for make_default_context(), autoinit and
mark_cuda_test), done in ``pytest_configure`` (so before test modules are imported) and
again before each test.  Not with CUDA_VISIBLE_DEVICES: that must be set before the
driver is initialized, which any earlier plugin or conftest touching CUDA defeats
silently; it hides the other GPUs, so ``gpus(2)`` tests would skip under xdist; and it
renumbers the devices.  The primary context is the one the CUDA runtime (CuPy, PyTorch)
also picks up in a thread where it is current.

gpuhost is imported only when a test or option needs it: a suite that does not use CUDA
pays nothing for the plugin.
"""
import gc
import os
import re
import sys

import pytest

_DEVICE = pytest.StashKey()  # the device number the tests run on, or None

# The resource types the leak check counts, with the words for them in its messages.
_LEAK_TYPES = (("Allocation", "allocation"), ("Stream", "stream"), ("Event", "event"),
               ("Module", "module"))

_MIB = 2**20


def pytest_addoption(parser):
    """pytest's hook adding the options ``--gpuhost-device`` and ``--gpuhost-leak-tolerance``.

    ``--gpuhost-device N`` runs the tests on device N (its primary context current,
    CUDA_DEVICE=N); ``--gpuhost-leak-tolerance BYTES`` is how far the device's free memory
    may fall during a test using `gpuhost_leak_check` (default 64 MiB). They are in the
    "gpuhost (CUDA)" group of ``pytest --help``. Called by pytest, not by users.

    Parameters
    ----------
    parser : pytest.Parser
        pytest's command-line parser.

    Examples
    --------
    On the command line::

        pytest --gpuhost-device 1 --gpuhost-leak-tolerance 0

    What the hook adds, shown with a stand-in for pytest's parser:

    >>> from gpuhost import pytest_plugin
    >>> class Group:
    ...     def addoption(self, name, **kwargs):
    ...         print(name, kwargs["metavar"], kwargs["default"])
    >>> class Parser:
    ...     def getgroup(self, name, description=""):
    ...         print("group", name)
    ...         return Group()
    >>> pytest_plugin.pytest_addoption(Parser())
    group gpuhost
    --gpuhost-device N None
    --gpuhost-leak-tolerance BYTES 67108864
    """
    group = parser.getgroup("gpuhost", "gpuhost (CUDA)")
    group.addoption("--gpuhost-device", type=int, default=None, metavar="N",
                    dest="gpuhost_device",
                    help="run the tests on CUDA device N: its primary context is made "
                         "current and CUDA_DEVICE is set to N (every xdist worker uses it)")
    group.addoption("--gpuhost-leak-tolerance", type=int, default=64 * _MIB, metavar="BYTES",
                    dest="gpuhost_leak_tolerance",
                    help="how far the device's free memory may fall during a test using "
                         "gpuhost_leak_check (default: 64 MiB; the driver keeps memory for "
                         "a context's local memory, printf and malloc heaps)")


def _is_xdist_controller(config):
    return (not hasattr(config, "workerinput")
            and getattr(config.option, "dist", "no") not in (None, "no")
            and bool(getattr(config.option, "numprocesses", None)))


def _worker_index(config):
    """k for xdist worker gw<k>, else None."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput:
        return None
    match = re.fullmatch(r"gw(\d+)", str(workerinput.get("workerid", "")))
    return int(match.group(1)) if match else None


def _usable_count():
    """(device count, None), or (0, why CUDA is not usable)."""
    from gpuhost import CudaSupportError, gpus

    try:
        return len(gpus), None
    except CudaSupportError as e:
        return 0, str(e)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    """pytest's hook registering the ``cuda`` and ``gpus(n)`` markers and choosing the device.

    The device is ``--gpuhost-device``'s, or under pytest-xdist worker ``gw<k>``'s
    ``k % device count``; it is selected (``select_device``) before the test modules are
    imported. Called by pytest, not by users.

    Parameters
    ----------
    config : pytest.Config
        pytest's configuration, with the options of `pytest_addoption`.

    Raises
    ------
    pytest.UsageError
        ``--gpuhost-device`` names a device that does not exist, or CUDA is not usable.

    Examples
    --------
    The markers it registers::

        @pytest.mark.cuda
        def test_on_any_gpu(): ...

        @pytest.mark.gpus(2)
        def test_peer_copy(): ...

    What it does with ``--gpuhost-device 1``, shown with a stand-in for pytest's
    configuration:

    >>> import os, types
    >>> import pytest
    >>> from gpuhost import pytest_plugin
    >>> class Config:
    ...     def __init__(self, device=None):
    ...         self.option = types.SimpleNamespace(gpuhost_device=device)
    ...         self.stash = pytest.Stash()
    ...     def getoption(self, name):
    ...         return getattr(self.option, name)
    ...     def addinivalue_line(self, name, line):
    ...         print(name, "=", line)
    >>> pytest_plugin.pytest_configure(Config(device=1))
    markers = cuda: needs a usable CUDA device; skipped otherwise
    markers = gpus(n): needs at least n CUDA devices; skipped otherwise
    >>> gpuhost.gpus.current.id, os.environ["CUDA_DEVICE"]
    (1, '1')
    >>> del os.environ["CUDA_DEVICE"]           # undone, for what follows here
    >>> _ = gpuhost.select_device(0)
    """
    config.addinivalue_line("markers", "cuda: needs a usable CUDA device; skipped otherwise")
    config.addinivalue_line("markers", "gpus(n): needs at least n CUDA devices; skipped "
                                       "otherwise")
    config.stash[_DEVICE] = None
    option = config.getoption("gpuhost_device")
    worker = _worker_index(config)
    if option is None and worker is None:
        return
    count, why = _usable_count()
    if option is not None:
        if why is not None:
            raise pytest.UsageError("--gpuhost-device %d: CUDA is not usable here: %s"
                                    % (option, why))
        if not 0 <= option < count:
            from gpuhost._pycuda_tools import _devices_phrase

            raise pytest.UsageError("--gpuhost-device %d: there is no device %d; %s"
                                    % (option, option, _devices_phrase(count)))
        device = option
    elif count == 0:
        return  # CUDA is not usable: the markers skip, the fixtures skip
    else:
        device = worker % count
    os.environ["CUDA_DEVICE"] = str(device)
    if _is_xdist_controller(config):
        return  # the controller runs no test: no context for it
    import gpuhost

    gpuhost.select_device(device)
    config.stash[_DEVICE] = device


@pytest.fixture(autouse=True)
def _gpuhost_chosen_device(request):
    """Before each test, make the chosen device's context current again if an earlier
    test switched away from it (nothing when no device was chosen)."""
    device = request.config.stash.get(_DEVICE, None)
    if device is None:
        return
    import gpuhost

    current = gpuhost.gpus.current
    if current is None or current.id != device:
        gpuhost.select_device(device)


def _marker_count(marker):
    n = marker.kwargs.get("n", marker.args[0] if marker.args else None)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        pytest.fail("@pytest.mark.gpus takes the number of devices the test needs, e.g. "
                    "gpus(2); got %r" % (n,), pytrace=False)
    return n


def pytest_runtest_setup(item):
    """pytest's hook skipping a test whose ``cuda`` or ``gpus(n)`` marker cannot be met here.

    ``cuda``: skipped when no CUDA device is usable, with the driver's reason;
    ``gpus(n)``: skipped with fewer than n devices. A ``gpus`` marker without a positive
    int fails the test. Called by pytest, not by users.

    Examples
    --------
    >>> import pytest
    >>> @pytest.mark.gpus(2)
    ... def test_two_devices():
    ...     assert len(gpuhost.gpus) >= 2
    """
    # No ordering: a conftest's own gpus/cuda handling (registered later) runs first.
    if item.get_closest_marker("cuda") is not None:
        _, why = _usable_count()
        if why is not None:
            pytest.skip("needs a CUDA device: %s" % why)
    marker = item.get_closest_marker("gpus")
    if marker is not None:
        need = _marker_count(marker)
        count, why = _usable_count()
        if count < need:
            pytest.skip("needs %d devices, %d found%s"
                        % (need, count, " (%s)" % why if why else ""))


# ---- fixtures ----

@pytest.fixture
def gpuhost_context():
    """The fixture giving a test the default device's primary context, current.

    The device is make_default_context()'s: the one chosen by ``--gpuhost-device`` or
    xdist, else CUDA_DEVICE, else the first usable one. The context is pushed for the
    test and popped after it. The test is skipped where CUDA is not usable.

    Yields
    ------
    gpuhost.Context
        The context, current during the test.

    Examples
    --------
    In a test module (pytest runs it; the plugin is loaded with gpuhost):

    >>> def test_copy(gpuhost_context):
    ...     d = gpuhost.to_device(np.arange(3))
    ...     assert d.copy_to_host().tolist() == [0, 1, 2]
    """
    import gpuhost
    from gpuhost._pycuda_tools import make_default_context

    _, why = _usable_count()
    if why is not None:
        pytest.skip("needs a CUDA device: %s" % why)
    ctx = make_default_context()
    yield ctx
    if gpuhost.gpus.current is not None:
        gpuhost.current_context().pop()  # the top, whichever: the stack is as deep as before


@pytest.fixture
def gpuhost_device(gpuhost_context):
    """The fixture giving a test the Device of `gpuhost_context`, its context current.

    Skips the test where CUDA is not usable.

    Returns
    -------
    gpuhost.Device

    Examples
    --------
    >>> def test_device(gpuhost_device):
    ...     assert gpuhost.gpus.current.id == gpuhost_device.id
    """
    return gpuhost_context.device


@pytest.fixture
def gpuhost_leak_check(gpuhost_context):
    """The fixture `gpuhost_context`, with a leak check around the test.

    The test fails if it leaves gpuhost streams, events, modules or allocations alive
    (after gc.collect() and emptying the memory pools), or the device with less free
    memory than it found (beyond ``--gpuhost-leak-tolerance``), or an asynchronous CUDA
    error pending: the context is synchronized at the end, so that the error fails the
    test that caused it. Skips the test where CUDA is not usable.

    Returns
    -------
    gpuhost.Context
        The context, current during the test.

    Examples
    --------
    >>> def test_no_leak(gpuhost_leak_check):
    ...     s = gpuhost.stream()
    ...     s.synchronize()
    ...     del s  # kept alive, the test would fail: "1 stream" still alive
    """
    return gpuhost_context


_POOL_CLASSES = (("gpuhost.memory", ("MemoryPool", "PinnedMemoryPool")),
                 ("gpuhost.tools", ("DeviceMemoryPool", "PageLockedMemoryPool")),
                 ("gpuhost._core", ("Pool",)))
_HAVE_GC = 1 << 14  # Py_TPFLAGS_HAVE_GC: the type's instances are tracked by gc


def _release(pool):
    """Give `pool`'s held blocks back (pycuda's free_held, CuPy's free_all_blocks)."""
    for name in ("free_held", "free_all_blocks"):
        method = getattr(pool, name, None)
        if callable(method):
            method()
            return


def _free_pool_blocks(ctx):
    """Give the blocks gpuhost's memory pools hold back to the driver, so that they count
    neither as live allocations nor as used memory: the context's default pool (device
    arrays allocate from it), and every pool of the pool modules the tests imported (those
    modules are not imported here)."""
    core = sys.modules.get("gpuhost._core")
    default_pool = getattr(core, "default_pool", None)
    if callable(default_pool):
        _release(default_pool(ctx))
    classes = []
    for module, names in _POOL_CLASSES:
        for name in names:
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type) and cls not in classes:
                classes.append(cls)
    if not classes:
        return
    tracked = tuple(c for c in classes if c.__flags__ & _HAVE_GC)
    untracked = tuple(c for c in classes if c not in tracked)
    objects = gc.get_objects()
    pools = [o for o in objects if isinstance(o, tracked)] if tracked else []
    if untracked:  # C types gc does not track: look one reference below what it does
        pools += [o for o in gc.get_referents(*objects) if isinstance(o, untracked)]
    del objects
    for pool in {id(p): p for p in pools}.values():
        _release(pool)


def _cached_modules():
    """How many modules gpuhost keeps loaded by design: the built-in copy kernel's (one
    per context) and those of RawKernel objects (one per device, on first use)."""
    n = 0
    copykernel = sys.modules.get("gpuhost._copykernel")
    if copykernel is not None:
        n += len(getattr(copykernel, "_loaded", ()))
    kernels = sys.modules.get("gpuhost.kernels")
    raw = getattr(kernels, "RawKernel", None)
    if isinstance(raw, type):
        for obj in gc.get_objects():
            if isinstance(obj, raw):
                n += len(getattr(obj, "_kernels", ()))
    return n


def _free_threaded():
    import sysconfig

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def live_counts():
    """How many of each resource the leak check counts are alive, for tests of your own.

    These types are not tracked by the garbage collector (gc.get_objects() does not list
    them), but each instance holds a reference to its heap type, so the type's reference
    count moves with them: a precise and cheap count; compare two calls' results, not the
    numbers themselves.  On a free-threaded build, where instances count their type per
    thread, they are looked for instead one reference away from every object the collector
    tracks (and through device arrays).

    Returns
    -------
    dict
        {"Allocation": n, "Stream": n, "Event": n, "Module": n}.

    Examples
    --------
    >>> from gpuhost.pytest_plugin import live_counts
    >>> before = live_counts()["Stream"]
    >>> s = gpuhost.stream()
    >>> live_counts()["Stream"] - before
    1
    """
    import gpuhost

    types = {name: getattr(gpuhost, name) for name, _ in _LEAK_TYPES}
    if not _free_threaded():
        return {name: sys.getrefcount(tp) for name, tp in types.items()}
    return _scan_counts(types)


def _scan_counts(types):
    import gpuhost

    wanted = {tp: name for name, tp in types.items()}
    found = {}
    for obj in gc.get_referents(*gc.get_objects()):
        tp = type(obj)
        if tp in wanted:
            found[id(obj)] = obj
        elif tp is gpuhost.DeviceArray:
            for inner in (getattr(obj, "owner", None), getattr(obj, "stream", None)):
                if type(inner) in wanted:
                    found[id(inner)] = inner
    counts = dict.fromkeys(types, 0)
    for obj in found.values():
        counts[wanted[type(obj)]] += 1
    return counts


def _memory_checked(count):
    """Whether the device's free memory says anything about this process: not when more
    xdist workers than devices share them."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    return not (workers and workers.isdigit() and int(workers) > count)


class _Snapshot:
    def __init__(self, ctx, memory):
        from gpuhost import _pycuda_tools

        _pycuda_tools.clear_context_caches()
        gc.collect()
        _free_pool_blocks(ctx)  # blocks freed by the collection too
        self.counts = live_counts()
        self.cached = _cached_modules()
        self.free = ctx.get_memory_info().free if memory else None


def _leak_report(ctx, before, tolerance):
    """What the test leaked, as text, or None."""
    from gpuhost import CudaDriverError

    try:
        ctx.synchronize()
    except CudaDriverError as e:
        return ("gpuhost_leak_check: an asynchronous CUDA error surfaced when the test's "
                "work was synchronized at its end: %s" % e)
    after = _Snapshot(ctx, before.free is not None)
    leaked = []
    for name, word in _LEAK_TYPES:
        n = after.counts[name] - before.counts[name]
        if name == "Module":
            n -= max(0, after.cached - before.cached)
        if n > 0:
            leaked.append("%d %s%s" % (n, word, "" if n == 1 else "s"))
    lines = []
    if leaked:
        lines.append("gpuhost objects made during the test are still alive after it (after "
                     "gc.collect()): %s" % ", ".join(leaked))
    if before.free is not None and before.free - after.free > tolerance:
        lines.append("the device's free memory fell by %.1f MiB during the test (tolerance "
                     "%.1f MiB: --gpuhost-leak-tolerance)"
                     % ((before.free - after.free) / _MIB, tolerance / _MIB))
    if not lines:
        return None
    return "gpuhost_leak_check: " + "; ".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """pytest's hook running `gpuhost_leak_check`'s check around a test's body.

    For tests using the fixture: take stock when the test body starts (every fixture set
    up), check when it returns, before any fixture is torn down; a leak fails the test
    (or, when it failed already, is added to its report). Called by pytest, not by users.

    Examples
    --------
    >>> def test_leaks(gpuhost_leak_check):
    ...     test_leaks.kept = gpuhost.stream()  # fails: "1 stream" still alive
    """
    funcargs = getattr(item, "funcargs", None) or {}
    ctx = funcargs.get("gpuhost_leak_check")
    if ctx is None:
        yield
        return
    count, _ = _usable_count()
    before = _Snapshot(ctx, _memory_checked(count))
    outcome = yield
    tolerance = item.config.getoption("gpuhost_leak_tolerance")
    if outcome.excinfo is not None:
        # The test failed already: keep its error; still synchronize, so that an
        # asynchronous error does not surface in the next test, and say so.
        report = _leak_report(ctx, before, tolerance)
        if report:
            item.add_report_section("call", "gpuhost", report)
        return
    report = _leak_report(ctx, before, tolerance)
    if report:
        failure = pytest.fail.Exception(report, pytrace=False)
        force = getattr(outcome, "force_exception", None)
        if force is None:  # pluggy < 1.1
            raise failure
        force(failure)
