"""One fresh process of tests/test_jit_cache.py: imports a kernel module and runs it.

    python3 jit_cache_child.py FOLDER MODULE [--unwritable] [--fsize BYTES]

FOLDER/MODULE.py defines run(), which launches its kernels and returns what the test checks
(JSON); the last line printed is "__REPORT__" and a JSON object: run()'s result, the numba
and llvmlite modules imported, gpuhost.jit_cache_info(), and on the fake driver (whose
kernels mode is turned on first) the launches recorded.  A kernel module reaches the fake's
records of each launch through this module (`import __main__ as child`: child.launch()).

--unwritable makes every write of a cache file fail as on a read-only file system (EROFS),
for a user who may write anywhere (root); --fsize limits the size of a file this process
writes (RLIMIT_FSIZE, its signal ignored): a full disk.
"""
import errno
import importlib
import json
import os
import sys

FAKE = os.environ.get("GPUHOST_TEST_DRIVER") == "fake"
_driver = []


def _fake():
    if not _driver:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "fakecuda"))
        from fake_control import FakeDriver

        _driver.append(FakeDriver(os.environ["GPUHOST_CUDA_DRIVER"]))
    return _driver[0]


def launches():
    """Launches the fake recorded in this process (None on a real GPU)."""
    return _fake().launches() if FAKE else None


def calls(name):
    """How often the fake's entry point `name` was called (None on a real GPU)."""
    return _fake().calls(name) if FAKE else None


def launch():
    """The fake's last launch: {"params": hex of the parameter buffer, "dims": [grid xyz,
    block xyz, shared], "name", "cooperative"}; None on a real GPU or before any."""
    last = _fake().last_launch() if FAKE else None
    if last is None:
        return None
    name, _, cooperative, _ = _fake().last_launch_info()
    return {"params": last[0].hex(), "dims": list(last[1]), "name": name,
            "cooperative": cooperative}


def ptx(dispatcher):
    """The PTX of the code a gpuhost.jit dispatcher loaded in this process, from its
    records or from numba (the fake loads PTX, not cubins)."""
    images = [p for _, p in dispatcher._rec.images.values()] + \
        [img[1] for _, _, img in dispatcher._loaded.values()]
    return [p.decode() for p in images if p]


def _unwritable():
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    tempfile.mkstemp = refuse


def _limit_file_size(size):
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def main():
    folder, name = sys.argv[1], sys.argv[2]
    if "--unwritable" in sys.argv:
        _unwritable()
    if "--fsize" in sys.argv:
        _limit_file_size(int(sys.argv[sys.argv.index("--fsize") + 1]))
    if FAKE:
        _fake().kernels(True)
    sys.path.insert(0, folder)
    out = importlib.import_module(name).run()
    import gpuhost

    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))
    report = {"out": out, "numba": loaded, "info": gpuhost.jit_cache_info()._asdict(),
              "launches": launches()}
    print("__REPORT__" + json.dumps(report))


if __name__ == "__main__":
    main()
