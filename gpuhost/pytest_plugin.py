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
    modules or allocations it made are still alive when it ends (each named with the line
    that made it), or if the device's free memory fell by more than
    ``--gpuhost-leak-tolerance``; the context is synchronized at the end so that an
    asynchronous error fails the test that caused it.  It reads gpuhost's own records,
    never the heap: some microseconds a test, whatever else the process holds.
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
import warnings

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
            from gpuhost._default_context import _devices_phrase

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
    test and popped after it. The test is skipped where CUDA is not usable, and fails
    saying why where no device gives a usable context (as after a sticky error).

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
    ctx = _push_default_context("gpuhost_context")
    yield ctx
    _pop_context()


def _push_default_context(fixture):
    """make_default_context() for a fixture: skips where CUDA is not usable, fails saying
    why where no device gives a usable context."""
    import gpuhost
    from gpuhost._default_context import make_default_context

    _, why = _usable_count()
    if why is not None:
        pytest.skip("needs a CUDA device: %s" % why)
    try:
        return make_default_context()
    except (gpuhost.CudaSupportError, gpuhost.CudaDriverError) as e:
        # e.g. a sticky error an earlier test left: every test after it says so
        pytest.fail("%s: no usable context for the test: %s" % (fixture, e), pytrace=False)


def _pop_context():
    import gpuhost

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
def gpuhost_leak_check():
    """The fixture `gpuhost_context`, with a leak check around the test.

    The test fails if it leaves gpuhost streams, events, modules or allocations alive
    (after emptying the memory pools, and gc.collect() if any is left), each named with
    the file, line and function that made it, or the device with less free memory than
    it found (beyond ``--gpuhost-leak-tolerance``), or an asynchronous CUDA error pending:
    the context is synchronized at the end, so that the error fails the test that caused
    it. Modules that gpuhost's kernel caches keep (a RawKernel's, a jit function's, the
    copy kernel's) and ``context_dependent_memoize`` results do not count. The check reads
    gpuhost's own records, never the heap, so it costs the same whatever the process
    holds. Skips the test where CUDA is not usable.

    Yields
    ------
    gpuhost.Context
        The context, current during the test (the one `gpuhost_context` gives).

    Examples
    --------
    >>> def test_no_leak(gpuhost_leak_check):
    ...     s = gpuhost.stream()
    ...     s.synchronize()
    ...     del s  # kept alive, the test would fail: "1 stream" still alive, with the
    ...            # line that made it
    """
    # gpuhost_context's work done here rather than by depending on it: a fixture fewer
    # for pytest to resolve and tear down is most of the check's cost per test.
    ctx = _push_default_context("gpuhost_leak_check")
    yield ctx
    _pop_context()


# ---- the leak check ----
#
# It asks gpuhost, never the garbage collector's view of the heap: the C core counts its
# allocations, streams, events and modules as they are made and freed, records which ones
# are made while a checked test runs (and by which line), and keeps a list of its live
# pools.  So a check costs the same whatever else the process holds, and it never calls
# gc.get_referents() or gc.get_objects(): walking every module's references is what hangs
# CPython 3.12.0-3.12.5 after anything awaited an asyncio future (gh-122695: _asyncio's
# module hands out a freed object; the next gc.collect() loops for ever).  gc.collect()
# runs only when something the test made is still alive, which a cycle may be all that
# holds.

_SHOWN = 10  # leaked objects listed one by one in a report; the rest are counted
_package = []  # gpuhost's package folder (with a separator), once known


def _package_folder():
    """Frames of files in it are looked past for where an object was made."""
    if not _package:
        import gpuhost

        # as the code objects name their files: the path the package was imported from
        _package.append(os.path.join(os.path.dirname(gpuhost.__file__), ""))
    return _package[0]


def live_counts():
    """How many gpuhost allocations, streams, events and modules are alive, for tests of
    your own.

    gpuhost counts them itself as they are made and freed: exact and cheap, on every
    CPython build (free-threaded ones included), whatever else the process holds.  A
    DeviceArray counts as its Allocation (views share it); a pool's block in use is an
    Allocation too.

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
    from gpuhost import _core

    return _core._live_counts()


def _memory_checked(count):
    """Whether the device's free memory says anything about this process: not when more
    xdist workers than devices share them."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    return not (workers and workers.isdigit() and int(workers) > count)


def _other_processes(ctx):
    """How many other processes have a context on ctx's device, as NVML counts them; None
    where NVML cannot tell (no library, no permission, not even this process listed).  In a
    container NVML may list the host's pids: a lone entry is this process."""
    from gpuhost import _nvml

    try:
        pids = [pid for pid, _ in _nvml.compute_processes(ctx.device.pci_bus_id)]
    except Exception:  # noqa: BLE001 - NVML's answer is a hint; without it, the fall counts
        return None
    if not pids:
        return None
    return len(pids) - 1


def _foreign_reserved(device_id):
    """({library: bytes its allocator holds on the device}, {libraries whose CUDA is
    initialized}) for the other libraries of this process whose allocators cache device
    memory (PyTorch's caching allocator, CuPy's default pool, JAX's), read without
    initializing any of them: what moves the device's free memory during a test without
    being gpuhost's."""
    held, started = {}, set()
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            started.add("PyTorch")
            held["PyTorch"] = torch.cuda.memory_reserved(device_id)
    except Exception:  # noqa: BLE001 - a torch without CUDA: nothing of its to count
        pass
    cupy = sys.modules.get("cupy")
    try:
        if cupy is not None:
            pool = cupy.get_default_memory_pool()
            held["CuPy"] = pool.total_bytes()
            if held["CuPy"]:
                started.add("CuPy")
    except Exception:  # noqa: BLE001
        pass
    jax = sys.modules.get("jax")
    try:
        backends = getattr(sys.modules.get("jax._src.xla_bridge"), "_backends", None)
        if jax is not None and backends:
            started.add("JAX")
            stats = [d.memory_stats() or {} for d in jax.devices() if d.platform == "gpu"]
            held["JAX"] = sum(st.get("pool_bytes", st.get("bytes_reserved", 0)) for st in stats)
    except Exception:  # noqa: BLE001
        pass
    return held, started


def _safe_repr(obj):
    """repr(obj), or a stand-in naming its type where repr raises: the check never fails
    on an object it cannot show."""
    try:
        return repr(obj)
    except Exception as e:  # noqa: BLE001 - any error of a user's repr
        return "<%s object (repr() raised %s)>" % (type(obj).__name__, type(e).__name__)


def _where(root, filename, line, function):
    if filename is None:
        return "made outside Python code"
    if root and filename.startswith(root):
        filename = os.path.relpath(filename, root)
    return "made at %s:%d in %s" % (filename, line, function)


def _leak_lines(records, lost, root):
    """(headline, lines) of the report on the objects still alive: how many of each kind,
    then a line for each one saying where it was made."""
    words = dict(_LEAK_TYPES)
    counts = {name: 0 for name, _ in _LEAK_TYPES}
    for kind, *_ in records:
        counts[kind] += 1
    summary = ", ".join("%d %s%s" % (n, words[kind], "" if n == 1 else "s")
                        for kind, n in counts.items() if n)
    if lost:
        summary += "%s%d made while memory ran out, not recorded" % (
            ", " if summary else "", lost)
    headline = ("gpuhost objects made during the test are still alive after it (after "
                "gc.collect()): " + summary)
    lines = []
    order = {name: i for i, (name, _) in enumerate(_LEAK_TYPES)}
    records = sorted(records, key=lambda r: (order[r[0]], r[2] or "", r[3] or 0))
    for kind, obj, filename, line, function in records[:_SHOWN]:
        what = _safe_repr(obj)
        pool = getattr(obj, "pool", None) if kind == "Allocation" else None
        if pool is not None:
            what += ", a block of " + _safe_repr(pool)
        lines.append("    %s %s: %s" % (words[kind], _where(root, filename, line, function),
                                       what))
    if len(records) > _SHOWN:
        lines.append("    ... and %d more" % (len(records) - _SHOWN))
    return headline, lines


class _Settings:
    """What every check of a session uses, found at its first checked test: gpuhost's
    modules, whether free memory is compared, the tolerance, the folder reports start at."""

    def __init__(self, config):
        import gpuhost
        from gpuhost import _default_context

        self.core, self.contexts = gpuhost._core, _default_context
        self.CudaDriverError = gpuhost.CudaDriverError
        count, _ = _usable_count()
        self.memory = _memory_checked(count)
        self.tolerance = config.getoption("gpuhost_leak_tolerance")
        self.root = os.path.join(str(config.rootpath), "")
        self.package = _package_folder()


_SETTINGS = pytest.StashKey()


class _LeakCheck:
    """One test's leak check: begun when its body starts (every fixture set up), ended
    when the body returns (before any fixture is torn down)."""

    def __init__(self, ctx, settings):
        self.ctx, self.settings, self.free = ctx, settings, None
        self.notes = []  # what the check could not count, said as warnings
        core = settings.core
        if settings.memory:
            core._release_pool_blocks()  # held blocks are not the test's: not counted
            self.foreign = _foreign_reserved(ctx.device.id)
            try:
                self.free = ctx.get_memory_info().free
            except settings.CudaDriverError as e:
                pytest.fail("gpuhost_leak_check: the context was already unusable when the "
                            "test began (an earlier test or fixture broke it): %s" % e,
                            pytrace=False)
        core._live_record(settings.package)

    def end(self):
        """What the test leaked, as text, or None; recording stops."""
        try:
            return self._report()
        finally:
            self.settings.core._live_record_stop()

    def _report(self):
        settings = self.settings
        core = settings.core
        try:
            self.ctx.synchronize()
        except settings.CudaDriverError as e:
            return ("gpuhost_leak_check: an asynchronous CUDA error surfaced when the test's "
                    "work was synchronized at its end: %s" % e)
        settings.contexts.clear_context_caches()  # what context_dependent_memoize kept
        core._release_pool_blocks()  # a pool's held blocks keep their streams alive
        records, lost = core._live_recorded()
        if records or lost:  # something the test made lives on: perhaps only in a cycle
            del records
            gc.collect()
            core._release_pool_blocks()  # blocks the collection gave back
            records, lost = core._live_recorded()
        headlines, lines = [], []
        if records or lost:
            headline, lines = _leak_lines(records, lost, settings.root)
            headlines.append(headline)
        del records
        if self.free is not None:
            try:
                fell = self.free - self.ctx.get_memory_info().free
            except settings.CudaDriverError:
                fell = 0  # the test closed or reset the context: nothing to compare
            fell = self._not_gpuhosts(fell)
            if fell > settings.tolerance:
                fall = ("the device's free memory fell by %.1f MiB during the test (tolerance "
                        "%.1f MiB: --gpuhost-leak-tolerance)"
                        % (fell / _MIB, settings.tolerance / _MIB))
                others = _other_processes(self.ctx)
                if others:  # free memory is the device's: theirs moves it too
                    self.notes.append(
                        "gpuhost_leak_check: %s, but %d other process%s use%s the device "
                        "(NVML says): not counted against this test, whose gpuhost objects "
                        "were checked" % (fall, others, "" if others == 1 else "es",
                                          "s" if others == 1 else ""))
                else:
                    headlines.append(fall)
        if not headlines:
            return None
        return "\n".join(["gpuhost_leak_check: " + "; ".join(headlines)] + lines)

    def _not_gpuhosts(self, fell):
        """The fall of free memory less what other libraries' allocators took meanwhile
        (PyTorch's cache growing is not gpuhost's leak); 0, with a note, when one of them
        started CUDA during the test (its context's own memory cannot be told apart)."""
        held, started = self.foreign
        now_held, now_started = _foreign_reserved(self.ctx.device.id)
        if now_started - started:
            self.notes.append(
                "gpuhost_leak_check: %s began using the device during the test, so its free "
                "memory was not compared (the test's gpuhost objects were checked)"
                % ", ".join(sorted(now_started - started)))
            return 0
        return fell - sum(now_held.get(lib, 0) - held.get(lib, 0) for lib in now_held)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """pytest's hook running `gpuhost_leak_check`'s check around a test's body.

    For tests using the fixture: begin when the test body starts (every fixture set up),
    check when it returns, before any fixture is torn down; a leak fails the test (or,
    when it failed already, is added to its report). Called by pytest, not by users.

    Examples
    --------
    >>> def test_leaks(gpuhost_leak_check):
    ...     test_leaks.kept = gpuhost.stream()  # fails: "1 stream" still alive, and where
    """
    funcargs = getattr(item, "funcargs", None) or {}
    ctx = funcargs.get("gpuhost_leak_check")
    if ctx is None:
        yield
        return
    settings = item.config.stash.get(_SETTINGS, None)
    if settings is None:
        settings = item.config.stash[_SETTINGS] = _Settings(item.config)
    check = _LeakCheck(ctx, settings)
    outcome = yield
    report = check.end()
    for note in check.notes:
        warnings.warn(pytest.PytestWarning(note))
    if outcome.excinfo is not None:
        # The test failed already: keep its error; what it leaked (and an asynchronous
        # error, surfaced here rather than in the next test) is shown beside it.
        if report:
            item.add_report_section("call", "gpuhost", report)
        return
    if report:
        failure = pytest.fail.Exception(report, pytrace=False)
        force = getattr(outcome, "force_exception", None)
        if force is None:  # pluggy < 1.1
            raise failure
        force(failure)
